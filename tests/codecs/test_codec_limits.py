"""Issue 16, items 10 and 11 in the codecs: nesting depth is bounded, work is linear in
the input (XML attributes, long numbers), length prefixes are checked against the bytes
present, and untrusted bytes only ever raise ``DecodeError``."""

from __future__ import annotations

import time
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import JsonCodec, get_codec, merge_documents
from sowlib.codecs.limits import MAX_DEPTH, document_depth
from sowlib.errors import ConfigError, DecodeError


def nested_json(depth: int) -> bytes:
    """A JSON object whose containers nest ``depth`` levels."""
    return b'{"a":' * (depth - 1) + b'{"a":1}' + b"}" * (depth - 1)


@pytest.mark.parametrize("use_orjson", [True, False], ids=["orjson", "stdlib"])
def test_issue16_json_nesting_is_bounded(use_orjson: bool) -> None:
    codec = get_codec("json", use_orjson=use_orjson)
    assert document_depth(codec.decode(nested_json(MAX_DEPTH))) == MAX_DEPTH
    for depth in (MAX_DEPTH + 1, 1000, 5000):
        with pytest.raises(DecodeError):
            codec.decode(nested_json(depth))
    with pytest.raises(DecodeError):
        codec.decode(b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}")


def test_issue16_json_batch_decode_checks_depth() -> None:
    codec = JsonCodec()
    flat = [b'{"a":1}', b'{"b":"{["}']
    assert codec.decode_many(flat) == [{"a": 1}, {"b": "{["}]
    with pytest.raises(DecodeError):
        codec.decode_many([*flat, nested_json(MAX_DEPTH + 1)])


def test_issue16_delta_publish_onto_a_deep_record_is_a_sow_error() -> None:
    with SowStore() as store:
        topic = store.create_topic("t", keys=["/id"])
        deep = b'{"id":1,"a":' + nested_json(MAX_DEPTH - 1) + b"}"
        topic.publish(deep)
        topic.delta_publish(deep)  # as deep as allowed: merges
        with pytest.raises(DecodeError):
            topic.delta_publish(b'{"id":1,"a":' + nested_json(1000) + b"}")
        with pytest.raises(DecodeError):
            topic.publish(b'{"id":2,"a":' + nested_json(1000) + b"}")
        assert len(topic) == 1


def test_issue16_merge_of_hand_built_deep_documents_is_a_decode_error() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(DecodeError):
        merge_documents(deep, deep)
    with pytest.raises(DecodeError):
        get_codec("json").merge(deep, deep)


def test_issue16_msgpack_nesting_and_length_prefixes_are_bounded() -> None:
    codec = get_codec("msgpack")
    ok = b"\x81\xa1a" + b"\x91" * (MAX_DEPTH - 2) + b"\xc0"
    assert document_depth(codec.decode(ok)) == MAX_DEPTH - 1
    for depth in (MAX_DEPTH + 1, 1000, 100_000):
        with pytest.raises(DecodeError):
            codec.decode(b"\x81\xa1a" + b"\x91" * depth + b"\xc0")
    huge = [b"\xdd", b"\xdf", b"\xdb", b"\xc6", b"\xc9"]  # array, map, str, bin, ext 32
    started = time.monotonic()
    for marker in huge:
        with pytest.raises(DecodeError):
            codec.decode(b"\x81\xa1a" + marker + b"\xff\xff\xff\xff\x05")
    assert time.monotonic() - started < 1.0
    wide = msgpack.packb({"a": [[] for _ in range(5000)]})
    assert len(codec.decode(wide)["a"]) == 5000  # many containers, shallow: accepted


def test_issue16_xml_nesting_is_bounded() -> None:
    codec = get_codec("xml")
    deep = b"<a>" * 250 + b"<b x='1'/>" + b"</a>" * 250
    with pytest.raises(DecodeError):
        codec.decode(deep)
    ok = b"<a>" * 100 + b"<b x='1'/>" + b"</a>" * 100
    assert document_depth(codec.decode(ok)) == 102


@pytest.mark.parametrize("count", [1, 16, 17, 40_000])
def test_issue16_xml_attributes_decode_in_linear_time(count: int) -> None:
    codec = get_codec("xml")
    attributes = b" ".join(b'x%d="%d"' % (i, i) for i in range(count))
    data = b"<a xmlns:p='urn:p' " + attributes + b" p:y='v'><c>1</c></a>"
    started = time.monotonic()
    doc = codec.decode(data)["a"]
    assert time.monotonic() - started < 1.0
    assert len(doc) == count + 2
    assert doc["@x0"] == 0
    assert doc[f"@x{count - 1}"] == count - 1
    assert doc["@y"] == "v"
    assert list(doc)[-1] == "c"


@pytest.mark.parametrize("name", ["xml", "fix", "nvfix"])
def test_issue16_long_digit_runs_stay_text(name: str) -> None:
    digits = "9" * 100_000
    codec = get_codec(name)
    data = {
        "xml": f"<a><b>{digits}</b><c x='1'/></a>".encode(),
        "fix": f"1={digits}\x01".encode(),
        "nvfix": f"b={digits}\x01".encode(),
    }[name]
    started = time.monotonic()
    doc = codec.decode(data)
    assert time.monotonic() - started < 1.0
    value = doc["a"]["b"] if name == "xml" else next(iter(doc.values()))
    assert value == digits
    assert codec.decode(codec.encode(doc)) == doc


def test_issue16_fix_body_length_is_not_trusted() -> None:
    doc = get_codec("fix").decode(b"8=FIX.4.2\x019=99999999999999999999\x0135=D\x01")
    assert doc["35"] == "D"


def test_issue16_codec_options_from_a_file_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        get_codec("fix", separator=b"")
    with pytest.raises(ConfigError):
        get_codec("json", no_such_option=1)


SEEDS = {
    "json": b'{"a":1,"b":[1,2,{"c":"x\\u00e9"}],"d":1.5e3}',
    "msgpack": bytes(msgpack.packb({"a": 1, "b": [1, {"c": "x"}], "d": 1.5, "e": b"\x00"})),
    "xml": b'<a x="1"><b>2</b><b>3</b><c y="z">t</c></a>',
    "fix": b"8=FIX.4.2\x0135=D\x0155=IBM\x0138=100\x01",
    "nvfix": b"a=1\x01b=x\x01c=\x01",
}


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(SEEDS)),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
    tail=st.binary(max_size=16),
)
def test_issue16_mutated_messages_only_raise_decode_errors(
    name: str, edits: list[tuple[int, int]], tail: bytes
) -> None:
    data = bytearray(SEEDS[name])
    for position, byte in edits:
        data[position % len(data)] = byte
    data += tail
    codecs = [get_codec(name)]
    if name == "json":
        codecs.append(get_codec("json", use_orjson=False))
    for codec in codecs:
        offset: int | None = None
        try:
            codec.decode(bytes(data))
        except DecodeError as exc:
            offset = exc.offset
        assert offset is None or 0 <= offset <= len(data)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64))
def test_issue16_arbitrary_bytes_only_raise_decode_errors(data: bytes) -> None:
    for name in ("json", "msgpack", "xml", "fix", "nvfix"):
        try:
            get_codec(name).decode(data)
        except DecodeError:
            pass
