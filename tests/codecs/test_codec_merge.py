"""Delta merge laws (spec §12.1) and the per-type merge rules."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import codec_strategies as cs  # type: ignore[import-not-found]  # registered by conftest.py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import get_codec, merge_documents
from sowlib.document import MISSING, Element
from sowlib.errors import UnsupportedOperationError
from sowlib.paths import FieldPath, Step


def _leaves(
    doc: dict[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) for every non-object value; empty objects count as leaves."""
    for key, value in doc.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def _resolve(doc: Any, path: tuple[str, ...]) -> Any:
    return FieldPath(tuple(Step(name) for name in path)).resolve(doc)


def _untouched_by(delta: Any, path: tuple[str, ...]) -> bool:
    """True when no prefix of ``path`` (nor the path) is a field of the delta."""
    cur = delta
    for name in path:
        if not isinstance(cur, dict):
            return False
        if name not in cur:
            return True
        cur = cur[name]
    return False


@settings(max_examples=80)
@given(stored=cs.json_documents(), delta=cs.json_documents())
def test_merge_laws(stored: dict[str, Any], delta: dict[str, Any]) -> None:
    before = (copy.deepcopy(stored), copy.deepcopy(delta))
    merged = merge_documents(stored, delta)
    for path, value in _leaves(delta):
        if value != {}:
            assert _resolve(merged, path) == value
    for path, value in _leaves(stored):
        if _untouched_by(delta, path):
            assert _resolve(merged, path) == value
    assert merge_documents(merged, delta) == merged
    assert (stored, delta) == before


@settings(max_examples=40)
@given(stored=cs.json_documents(), delta=cs.json_documents())
def test_merge_result_shares_no_container_with_its_inputs(
    stored: dict[str, Any], delta: dict[str, Any]
) -> None:
    merged = merge_documents(stored, delta)
    kept = (copy.deepcopy(stored), copy.deepcopy(delta))

    def scramble(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                scramble(value)
            node["\x00scrambled"] = 1
        elif isinstance(node, list):
            for value in node:
                scramble(value)
            node.append("\x00scrambled")

    scramble(merged)
    assert (stored, delta) == kept


def test_spec_example_two_workers_add_fields() -> None:
    stored = {"id": 88, "client": "Rosa", "qty": 40, "stage": "new"}
    once = merge_documents(stored, {"id": 88, "stock": "ok"})
    twice = merge_documents(once, {"id": 88, "limit": "approved"})
    assert twice == {**stored, "stock": "ok", "limit": "approved"}


@pytest.mark.parametrize(
    ("stored", "delta", "merged"),
    [
        ({"a": {"x": 0, "y": 2}}, {"a": {"x": 1}}, {"a": {"x": 1, "y": 2}}),
        ({"a": [1, 2, 3]}, {"a": [9]}, {"a": [9]}),
        ({"a": {"x": 1}}, {"a": 5}, {"a": 5}),
        ({"a": 5}, {"a": {"x": 1}}, {"a": {"x": 1}}),
        ({"a": 1, "b": 2}, {"a": None}, {"a": None, "b": 2}),
        ({"a": [{"x": 1}]}, {"a": [{"y": 2}]}, {"a": [{"y": 2}]}),
        ({"a": 1}, {}, {"a": 1}),
    ],
)
def test_nested_merge_rules(stored: Any, delta: Any, merged: Any) -> None:
    assert merge_documents(stored, delta) == merged


def test_fix_merge_keeps_stored_tag_order_then_new_tags() -> None:
    fix = get_codec("fix", separator="|")
    stored = fix.decode(b"35=D|55=IBM|38=100|")
    merged = fix.merge(stored, fix.decode(b"99=x|38=200|"))
    assert fix.encode(merged) == b"35=D|55=IBM|38=200|99=x|"


def test_nvfix_merge_replaces_repeated_tags_as_a_group() -> None:
    nvfix = get_codec("nvfix", separator=";")
    merged = nvfix.merge(nvfix.decode(b"a=1;g=1;g=2;"), nvfix.decode(b"g=3;"))
    assert merged == {"a": 1, "g": 3}


@pytest.mark.parametrize(
    ("stored", "delta", "merged"),
    [
        # text replaced, attribute kept
        (b'<T><Px ccy="USD">12</Px></T>', b"<T><Px>13</Px></T>", b'<T><Px ccy="USD">13</Px></T>'),
        # attribute replaced, text kept
        (
            b'<T><Px ccy="USD">12</Px></T>',
            b'<T><Px ccy="EUR"/></T>',
            b'<T><Px ccy="EUR">12</Px></T>',
        ),
        # attribute added to a text-only element keeps its text
        (b"<T><Px>12</Px></T>", b'<T><Px ccy="EUR"/></T>', b'<T><Px ccy="EUR">12</Px></T>'),
        # repeated elements replaced as a group; new element added; root attribute kept
        (
            b'<T id="1"><L>1</L><L>2</L></T>',
            b"<T><L>3</L><N>x</N></T>",
            b'<T id="1"><L>3</L><N>x</N></T>',
        ),
        # nested element merges child by child
        (
            b"<T><P><a>1</a><b>2</b></P></T>",
            b"<T><P><a>9</a></P></T>",
            b"<T><P><a>9</a><b>2</b></P></T>",
        ),
    ],
)
def test_xml_merge_treats_elements_attributes_and_text_as_identifiers(
    stored: bytes, delta: bytes, merged: bytes
) -> None:
    xml = get_codec("xml")
    assert xml.merge(xml.decode(stored), xml.decode(delta)) == xml.decode(merged)


def test_xml_merge_result_is_a_decodable_shape() -> None:
    xml = get_codec("xml")
    merged = xml.merge(xml.decode(b'<T><Px ccy="USD">12</Px></T>'), xml.decode(b"<T><Px/></T>"))
    assert merged == {"T": {"Px": {"@ccy": "USD"}}}
    assert type(merged["T"]["Px"]) is dict
    assert xml.decode(xml.encode(merged)) == merged
    kept = xml.merge({"T": Element({"a": 1}, "t")}, {"T": {"b": 2}})
    assert kept == {"T": Element({"a": 1, "b": 2}, "t")}


def test_xml_merge_rejects_a_different_root() -> None:
    xml = get_codec("xml")
    with pytest.raises(UnsupportedOperationError) as info:
        xml.merge(xml.decode(b"<A/>"), xml.decode(b"<B/>"))
    assert info.value.operation == "delta_publish"


def test_binary_has_no_delta_merge() -> None:
    binary = get_codec("binary")
    assert binary.supports_delta is False
    with pytest.raises(UnsupportedOperationError) as info:
        binary.merge(b"a", b"b")
    assert info.value.operation == "delta_publish"


def test_merge_delta_leaf_resolves_through_codec(field_codec: Any) -> None:
    docs = {
        "json": ({"o": {"p": 1, "q": 2}}, {"o": {"p": 5}}, ("o", "p"), ("o", "q")),
        "msgpack": ({"o": {"p": 1, "q": 2}}, {"o": {"p": 5}}, ("o", "p"), ("o", "q")),
        "xml": ({"o": {"p": 1, "q": 2}}, {"o": {"p": 5}}, ("o", "p"), ("o", "q")),
        "fix": ({"1": 1, "2": 2}, {"1": 5}, ("1",), ("2",)),
        "nvfix": ({"p": 1, "q": 2}, {"p": 5}, ("p",), ("q",)),
    }
    stored, delta, changed, kept = docs[field_codec.name]
    merged = field_codec.decode(
        field_codec.encode(field_codec.merge(field_codec.decode(field_codec.encode(stored)), delta))
    )
    assert _resolve(merged, changed) == 5
    assert _resolve(merged, kept) == 2
    assert _resolve(merged, ("absent",)) is MISSING


_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)
)
_FLAT = st.dictionaries(st.sampled_from("abcdef"), _SCALAR, max_size=6)


@settings(max_examples=200)
@given(stored=_FLAT, delta=_FLAT)
def test_flat_documents_merge_in_order_into_a_new_dict(
    stored: dict[str, Any], delta: dict[str, Any]
) -> None:
    before = (list(stored.items()), list(delta.items()))
    merged = merge_documents(stored, delta)
    # stored fields in their order (replaced in place), then the delta's new ones
    expected = [(k, delta.get(k, v)) for k, v in stored.items()]
    expected += [(k, v) for k, v in delta.items() if k not in stored]
    assert list(merged.items()) == expected
    assert merged is not stored
    assert merged is not delta
    assert (list(stored.items()), list(delta.items())) == before
