"""``top_values`` of FIX and NVFIX (one field read without a document) = decoding.

``publish_many`` keys a batch of tag-value messages by reading the key field out of
the bytes; it must give what ``decode(message)[field]`` gives, and give up (None) on
every message that ``decode`` refuses or that holds the field more or less than once.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import get_codec
from sowlib.errors import DecodeError, SowError

CODECS: dict[str, Any] = {
    "fix": get_codec("fix"),
    "nvfix": get_codec("nvfix"),
    "fix|": get_codec("fix", separator="|"),
}

# Pieces that make valid, almost valid and invalid messages likely.
_PIECES = st.sampled_from(
    [b"11", b"1", b"111", b"=", b"\x01", b"|", b"55", b"a", b"Qty", b"-", b"0.5", b"1e3",
     b"nan", b"", b"\xff", b"\xc3\xa9", b" ", b"007", b"true"]
)  # fmt: skip
_MESSAGES = st.lists(_PIECES, max_size=12).map(b"".join)
_FIELDS = st.sampled_from(["11", "1", "a", "Qty", "55"])


def _reference(codec: Any, payloads: list[bytes], field: str) -> list[Any] | None:
    out = []
    for payload in payloads:
        try:
            doc = codec.decode(payload)
        except DecodeError:
            return None
        if field not in doc or isinstance(doc[field], list):
            return None
        out.append(doc[field])
    return out


def _same(a: list[Any] | None, b: list[Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        type(x) is type(y) and (x == y or (type(x) is float and math.isnan(x) and math.isnan(y)))
        for x, y in zip(a, b, strict=True)
    )


@given(st.sampled_from(sorted(CODECS)), st.lists(_MESSAGES, min_size=1, max_size=4), _FIELDS)
def test_top_values_equal_decoding(name: str, payloads: list[bytes], field: str) -> None:
    codec = CODECS[name]
    got = codec.top_values(payloads, field)
    assert _same(got, _reference(codec, payloads, field)), (payloads, got)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"11=5\x0155=AAPL\x01", [5]),
        (b"55=AAPL\x0111=ORD-7", ["ORD-7"]),
        (b"11=\x01", [None]),
        (b"11=007\x01", ["007"]),
        (b"111=5\x01", None),  # no tag 11
        (b"11=5\x0111=6\x01", None),  # a repeated tag decodes to a list
        (b"11=5\x01=3\x01", None),  # an empty tag is malformed
        (b"11=5\x01\x01", None),  # an empty field is malformed
        (b"11=5\x01x=3\x01", None),  # FIX tags are numbers
    ],
)
def test_top_values_examples(payload: bytes, expected: list[Any] | None) -> None:
    assert CODECS["fix"].top_values([payload], "11") == expected


def test_decode_refuses_an_empty_fix_tag() -> None:
    # The one-pass decode used to accept ``=3`` beside numeric tags.
    with pytest.raises(DecodeError, match="not a number"):
        CODECS["fix"].decode(b"11=5\x01=3")


@pytest.mark.parametrize("message_type", ["fix", "nvfix"])
def test_publish_many_keys_tag_value_messages_as_one_by_one(
    tmp_path: Any, message_type: str
) -> None:
    key = "11" if message_type == "fix" else "Id"
    msgs = [f"{key}={i % 7}\x0155=S{i}\x0144={i}.5\x01".encode() for i in range(40)]
    with SowStore(tmp_path / "many") as many, SowStore(tmp_path / "one") as one:
        t_many = many.create_topic("t", keys=[f"/{key}"], message_type=message_type)
        t_one = one.create_topic("t", keys=[f"/{key}"], message_type=message_type)
        t_many.publish_many(msgs)
        for m in msgs:
            t_one.publish(m)
        assert [(r.sow_key, r.data) for r in t_many.sow()] == [
            (r.sow_key, r.data) for r in t_one.sow()
        ]
        with pytest.raises(SowError):
            t_many.publish_many([msgs[0], f"{key}=1\x01=2\x01".encode()])
        assert len(t_many) == 7
