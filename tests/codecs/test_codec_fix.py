"""FIX and NVFIX: flat tag=value documents; interoperability with simplefix."""

from __future__ import annotations

from typing import Any

import codec_strategies as cs  # type: ignore[import-not-found]  # registered by conftest.py
import pytest
import simplefix
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import get_codec, infer_scalar
from sowlib.errors import ConfigError, DecodeError, EncodeError
from sowlib.paths import parse_path

FIX = get_codec("fix")
NVFIX = get_codec("nvfix")


def _simplefix_message(pairs: list[tuple[int, str]]) -> bytes:
    message = simplefix.FixMessage()
    message.append_pair(8, "FIX.4.2", header=True)
    for tag, value in pairs:
        message.append_pair(tag, value)
    return bytes(message.encode())


def test_simplefix_message_decodes_to_its_tags() -> None:
    data = _simplefix_message([(35, "D"), (55, "AAPL"), (38, "100"), (44, "187.25"), (11, "007")])
    doc = FIX.decode(data)
    assert doc["8"] == "FIX.4.2"
    assert doc["35"] == "D"
    assert doc["55"] == "AAPL"
    assert doc["38"] == 100
    assert doc["44"] == 187.25
    assert doc["11"] == "007"
    assert doc["9"] == int(data.split(b"\x019=")[1].split(b"\x01")[0])
    assert list(doc)[:2] == ["8", "9"]
    assert list(doc)[-1] == "10"
    assert parse_path("/55").resolve(doc) == "AAPL"


# simplefix reads length-prefixed raw data fields (95/96, 212/213...) specially.
_RAW_TAGS = frozenset(simplefix.FixParser().raw_len_tags) | frozenset(
    simplefix.FixParser().raw_data_tags
)
_TAGS = st.integers(11, 9999).filter(lambda t: t != 35 and t not in _RAW_TAGS)
_VALUES = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="="),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60)
@given(
    pairs=st.lists(
        st.tuples(_TAGS, _VALUES),
        max_size=8,
        unique_by=lambda pair: pair[0],
    )
)
def test_simplefix_and_sowlib_agree_both_ways(pairs: list[tuple[int, str]]) -> None:
    data = _simplefix_message([(35, "D"), *pairs])
    doc = FIX.decode(data)
    parser = simplefix.FixParser()
    parser.append_buffer(FIX.encode(doc))
    parsed = parser.get_message()
    assert parsed is not None
    # Same tags in the same order with the same typed values ("0." may come back as "0.0").
    assert [(tag, infer_scalar(value.decode())) for tag, value in parsed] == [
        (int(tag), infer_scalar(value.decode())) for tag, value in _pairs(data)
    ]


def _pairs(data: bytes) -> list[tuple[bytes, bytes]]:
    fields = [f for f in data.split(b"\x01") if f]
    return [(f.partition(b"=")[0], f.partition(b"=")[2]) for f in fields]


def test_encoded_user_dict_parses_in_simplefix() -> None:
    data = FIX.encode({"8": "FIX.4.4", "35": "D", "38": 100, "44": 12.5, 10: "000"})
    parsed = simplefix.FixParser()
    parsed.append_buffer(data)
    message = parsed.get_message()
    assert message is not None
    assert message.get(38) == b"100"
    assert message.get(44) == b"12.5"
    assert message.get(10) == b"000"


@pytest.mark.parametrize("separator", ["|", b"|", 124, ";;", "\x01"])
def test_separator_is_configurable(separator: str | bytes | int) -> None:
    codec = get_codec("fix", separator=separator)
    sep = separator.encode() if isinstance(separator, str) else separator
    sep = bytes([sep]) if isinstance(sep, int) else sep
    data = sep.join([b"35=D", b"55=IBM", b"38=5", b""])
    assert codec.decode(data) == {"35": "D", "55": "IBM", "38": 5}
    assert codec.encode({"35": "D", "55": "IBM", "38": 5}) == data


@pytest.mark.parametrize("separator", ["", b"", "=", "a=", 256, -1, 1.5, None])
def test_bad_separator_is_a_config_error(separator: Any) -> None:
    with pytest.raises(ConfigError):
        get_codec("fix", separator=separator)


@pytest.mark.parametrize(
    ("data", "doc"),
    [
        (b"", {}),
        (b"35=D", {"35": "D"}),
        (b"35=D\x01", {"35": "D"}),
        (b"58=\x01", {"58": None}),
        (b"58=a=b\x01", {"58": "a=b"}),
        (b"269=0\x01270=1.5\x01269=1\x01270=2\x01", {"269": [0, 1], "270": [1.5, 2]}),
        (b"55=\xe9t\xe9\x01", {"55": "\udce9t\udce9"}),
    ],
)
def test_fix_decoding(data: bytes, doc: dict[str, Any]) -> None:
    assert FIX.decode(data) == doc
    assert FIX.decode(FIX.encode(doc)) == doc


def test_undecodable_bytes_survive_a_round_trip() -> None:
    data = b"55=\xe9t\xe9\x01"
    assert FIX.encode(FIX.decode(data)) == data


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"35D", 0),
        (b"35=D\x0155\x01", 5),
        (b"35=D\x01\x0155=X", 5),
        (b"35=D\x01Sym=X\x01", 5),
        (b"=X\x01", 0),
        (b"35=D\x01\x01", 5),
    ],
)
def test_malformed_fix_reports_the_field_offset(data: bytes, offset: int) -> None:
    with pytest.raises(DecodeError) as info:
        FIX.decode(data)
    assert info.value.message_type == "fix"
    assert info.value.offset == offset


def test_nvfix_names_are_any_bytes_but_equals_and_separator() -> None:
    doc = NVFIX.decode(b"Symbol=IBM\x01unit price=1.5\x01R&D=x\x01Note=\x01")
    assert doc == {"Symbol": "IBM", "unit price": 1.5, "R&D": "x", "Note": None}
    assert parse_path("[/unit price]").resolve(doc) == 1.5
    assert parse_path("/Note").resolve(doc) is None


@pytest.mark.parametrize(("data", "offset"), [(b"a=1;=2;", 4), (b"a=1;b;", 4), (b"x", 0)])
def test_malformed_nvfix_reports_the_field_offset(data: bytes, offset: int) -> None:
    with pytest.raises(DecodeError) as info:
        get_codec("nvfix", separator=";").decode(data)
    assert info.value.message_type == "nvfix"
    assert info.value.offset == offset


@pytest.mark.parametrize(
    ("codec", "doc"),
    [
        (FIX, {"Sym": "x"}),
        (FIX, {"35": {"a": 1}}),
        (FIX, {"35": "a\x01b"}),
        (FIX, {"35": float("inf")}),
        (FIX, [("35", "D")]),
        (NVFIX, {"": 1}),
        (NVFIX, {"a=b": 1}),
        (NVFIX, {"a": [[1]]}),
        (NVFIX, {None: 1}),
    ],
)
def test_encode_refuses_what_the_type_cannot_hold(codec: Any, doc: Any) -> None:
    with pytest.raises(EncodeError) as info:
        codec.encode(doc)
    assert info.value.message_type == codec.name


@settings(max_examples=40)
@given(doc=cs.fix_documents)
def test_fix_encoding_is_stable(doc: dict[str, Any]) -> None:
    once = FIX.encode(doc)
    assert FIX.encode(FIX.decode(once)) == once
