"""JSON ``decode`` of ``bytes`` (one translate for the long-integer and depth checks) gives
what the general path gives for the same message as a ``bytearray``: the same document, or
the same error at the same offset."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import JsonCodec
from sowlib.codecs.limits import MAX_DEPTH
from sowlib.errors import DecodeError

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _outcome(codec: JsonCodec, data: bytes | bytearray) -> Any:
    try:
        return ("doc", codec.decode(cast(bytes, data)))
    except DecodeError as exc:
        return ("error", exc.offset, str(exc).split(": b")[0].split(": bytearray")[0])


def _same(data: bytes) -> None:
    codec = JsonCodec()
    assert repr(_outcome(codec, data)) == repr(_outcome(codec, bytearray(data)))


@settings(max_examples=300)
@given(value=json_values, cut=st.integers(0, 40), junk=st.sampled_from([b"", b"x", b"]", b"{"]))
def test_bytes_decode_like_the_general_path(value: Any, cut: int, junk: bytes) -> None:
    text = json.dumps(value).encode()
    _same(text)
    _same(text[: max(0, len(text) - cut)] + junk)
    _same(b'{"v": ' + text + b"}")


@pytest.mark.parametrize(
    "data",
    [
        b'{"n": 1234567890123456789012}',  # a long run of digits: the standard library
        b'{"s": "1234567890123456789012"}',
        b'{"a": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}",  # too deep
        b'{"a": ' + b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2) + b"}",
        b'{"s": "' + b"{" * (MAX_DEPTH + 5) + b'"}',  # brackets in a string: checked, fine
        b"[1, 2]",
        b'"text"',
        b'{"a": 1',
        b'{"a": "\\ud800"}',
        '{"é": 1}'.encode(),
    ],
)
def test_edge_messages_decode_like_the_general_path(data: bytes) -> None:
    _same(data)
