"""decode(encode(doc)) == doc for generated documents of every codec's shape."""

from __future__ import annotations

from typing import Any

import codec_strategies as cs  # type: ignore[import-not-found]  # registered by conftest.py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import JsonCodec, get_codec

CASES = [
    ("json", {}, cs.json_documents()),
    ("msgpack", {}, cs.msgpack_documents),
    ("xml", {}, cs.xml_documents),
    ("fix", {}, cs.fix_documents),
    ("fix", {"separator": "|"}, cs.fix_documents),
    ("nvfix", {}, cs.nvfix_documents),
    ("nvfix", {"separator": "|"}, cs.nvfix_documents),
]


@pytest.mark.parametrize(
    ("name", "options", "documents"), CASES, ids=[f"{c[0]}{c[1] or ''}" for c in CASES]
)
@settings(max_examples=60)
@given(data=st.data())
def test_decode_inverts_encode(
    name: str, options: dict[str, Any], documents: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    codec = get_codec(name, **options)
    doc = data.draw(documents)
    assert codec.decode(codec.encode(doc)) == doc


@settings(max_examples=60)
@given(doc=cs.json_documents())
def test_stdlib_json_path_gives_the_same_documents_as_orjson(doc: Any) -> None:
    fast, slow = JsonCodec(), JsonCodec(use_orjson=False)
    data = slow.encode(doc)
    assert fast.decode(data) == slow.decode(data) == doc
    assert fast.decode(fast.encode(doc)) == doc


@settings(max_examples=40)
@given(doc=cs.xml_documents)
def test_xml_encoding_is_stable(doc: Any) -> None:
    codec = get_codec("xml")
    once = codec.encode(doc)
    assert codec.encode(codec.decode(once)) == once
