"""JSON and MessagePack specifics, the binary type, and bad input for every codec."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from sowlib.codecs import BinaryCodec, JsonCodec, get_codec
from sowlib.errors import DecodeError, EncodeError

JSON_CODECS = [JsonCodec(), JsonCodec(use_orjson=False)]
JSON_IDS = ["orjson", "stdlib"]


@pytest.mark.parametrize("codec", JSON_CODECS, ids=JSON_IDS)
@pytest.mark.parametrize(
    ("data", "doc"),
    [
        (
            b'{"a": 1, "b": 1.5, "c": "x", "d": true, "e": null, "f": [1, {"g": 2}]}',
            {"a": 1, "b": 1.5, "c": "x", "d": True, "e": None, "f": [1, {"g": 2}]},
        ),
        (b'{"big": 18446744073709551615}', {"big": 2**64 - 1}),
        (b'{"big": 18446744073709551616}', {"big": 2**64}),
        (b'{"neg": -9223372036854775809}', {"neg": -(2**63) - 1}),
        (b'{"id": "1234567890123456789012"}', {"id": "1234567890123456789012"}),
        (b' {"a": "\\u00e9\\ud83d\\ude00"} ', {"a": "\u00e9\U0001f600"}),
        (b'{"a": 1, "a": 2}', {"a": 2}),
        (b"{}", {}),
    ],
)
def test_json_decoding(codec: JsonCodec, data: bytes, doc: Any) -> None:
    got = codec.decode(data)
    assert got == doc
    assert [type(v) for v in got.values()] == [type(v) for v in doc.values()]


@pytest.mark.parametrize("codec", JSON_CODECS, ids=JSON_IDS)
@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b'{"a": }', 6),
        (b'{"a": 1', 7),
        (b'{"a": 1} x', 9),
        (b"[1, 2]", 0),
        (b'"text"', 0),
        (b"12", 0),
        (b"", 0),
        (b'{"\xc3\xa9": x}', 7),
    ],
)
def test_bad_json_reports_an_offset(codec: JsonCodec, data: bytes, offset: int) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode(data)
    assert info.value.message_type == "json"
    assert info.value.offset == offset


def test_non_json_constants_are_rejected_with_an_offset_by_orjson() -> None:
    for data in (b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}'):
        with pytest.raises(DecodeError) as info:
            JsonCodec().decode(data)
        assert info.value.offset in (6, 7)
        # The standard library's hooks receive no position, so that path has none.
        with pytest.raises(DecodeError) as info:
            JsonCodec(use_orjson=False).decode(data)
        assert info.value.message_type == "json"


@pytest.mark.parametrize("codec", JSON_CODECS, ids=JSON_IDS)
@pytest.mark.parametrize(
    "data",
    [b'{"a": 1e999}', b'{"a": "\\ud800"}', b'{"a": "\xff"}', b"[" * 100_000, b'{"a": 1}\x00'],
)
def test_json_paths_reject_the_same_documents(codec: JsonCodec, data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode(data)
    assert info.value.message_type == "json"


@pytest.mark.parametrize("codec", JSON_CODECS, ids=JSON_IDS)
def test_json_encoding(codec: JsonCodec) -> None:
    doc = {"a": 1, "big": 2**70, "nan": float("nan"), "t": (1, 2), "s": "é"}
    assert codec.decode(codec.encode(doc)) == {
        "a": 1,
        "big": 2**70,
        "nan": None,
        "t": [1, 2],
        "s": "é",
    }


@pytest.mark.parametrize("codec", JSON_CODECS, ids=JSON_IDS)
@pytest.mark.parametrize("doc", [{"b": b"x"}, {"s": {1, 2}}, {"o": object()}, {"u": "\ud800"}])
def test_json_encode_errors(codec: JsonCodec, doc: Any) -> None:
    with pytest.raises(EncodeError) as info:
        codec.encode(doc)
    assert info.value.message_type == "json"


MSGPACK = get_codec("msgpack")


@pytest.mark.parametrize(
    ("value", "doc"),
    [
        (
            {"s": "x", "b": b"\x00\xff", "n": None, "t": True, "i": -5, "f": 1.5, "l": [1, [2]]},
            {"s": "x", "b": b"\x00\xff", "n": None, "t": True, "i": -5, "f": 1.5, "l": [1, [2]]},
        ),
        ({"e": msgpack.ExtType(7, b"raw")}, {"e": b"raw"}),
        ({"ts": msgpack.Timestamp(1, 0)}, {"ts": msgpack.Timestamp(1, 0).to_bytes()}),
        ({"l": [msgpack.Timestamp(2, 5)]}, {"l": [msgpack.Timestamp(2, 5).to_bytes()]}),
        (
            {1: "one", b"k": {2.5: "x", True: 1, None: 0}},
            {"1": "one", "k": {"2.5": "x", "1": 1, "None": 0}},
        ),
        ({"u": 2**64 - 1}, {"u": 2**64 - 1}),
    ],
)
def test_msgpack_decoding(value: Any, doc: Any) -> None:
    assert MSGPACK.decode(msgpack.packb(value, use_bin_type=True)) == doc


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (msgpack.packb([1, 2]), 0),
        (msgpack.packb("x"), 0),
        (msgpack.packb({"a": 1}) + b"\x01", 4),
        (b"", None),
        (b"\x82\xa1a", None),
        (b"\xc1", None),
        (msgpack.packb({(1, 2): 3}, use_bin_type=True), None),
    ],
)
def test_bad_msgpack(data: bytes, offset: int | None) -> None:
    with pytest.raises(DecodeError) as info:
        MSGPACK.decode(data)
    assert info.value.message_type == "msgpack"
    assert info.value.offset == offset


@pytest.mark.parametrize("doc", [{"a": 2**64}, {"a": {1, 2}}, {"a": object()}])
def test_msgpack_encode_errors(doc: Any) -> None:
    with pytest.raises(EncodeError) as info:
        MSGPACK.encode(doc)
    assert info.value.message_type == "msgpack"


def test_binary_is_opaque() -> None:
    binary = get_codec("binary")
    assert isinstance(binary, BinaryCodec)
    assert binary.supports_filter is False
    payload = b"\x00\x01{not json"
    assert binary.decode(payload) == payload
    assert binary.decode(memoryview(payload)) == payload  # type: ignore[arg-type]
    assert binary.encode(bytearray(payload)) == payload
    with pytest.raises(EncodeError):
        binary.encode("text")


def test_every_codec_rejects_text_input(field_codec: Any) -> None:
    with pytest.raises(DecodeError) as info:
        field_codec.decode("{}")
    assert info.value.message_type == field_codec.name
    with pytest.raises(DecodeError):
        get_codec("binary").decode("x")  # type: ignore[arg-type]


def test_every_codec_accepts_memoryview(field_codec: Any) -> None:
    doc = {"r": {"1": 5}} if field_codec.name in ("json", "msgpack", "xml") else {"1": 5}
    if field_codec.name == "xml":
        doc = {"r": {"a": 5}}
    data = field_codec.encode(doc)
    assert field_codec.decode(memoryview(data)) == doc
