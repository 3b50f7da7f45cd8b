"""Hypothesis strategies: documents of the shapes each codec can represent.

Each strategy generates only documents the codec's ``decode`` can produce, so
``decode(encode(doc)) == doc`` must hold for every example.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from sowlib.codecs.infer import INT_MAX, INT_MIN, infer_scalar
from sowlib.document import Element

# No surrogates (not UTF-8) and no characters XML 1.0 cannot hold.
_XML_CHARS = st.characters(
    blacklist_categories=["Cs"],
    blacklist_characters="".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r")
    + "\ufffe\uffff",
)
_TEXT_CHARS = st.characters(blacklist_categories=["Cs"])

ints64 = st.integers(min_value=INT_MIN, max_value=INT_MAX)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)


def _self_inferring(text: str) -> bool:
    """Text that inference leaves as the same string (not a number, not empty)."""
    return infer_scalar(text) == text and isinstance(infer_scalar(text), str)


def inferred_strings(alphabet: st.SearchStrategy[str] = _TEXT_CHARS) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=1, max_size=12).filter(_self_inferring)


def inferred_scalars(alphabet: st.SearchStrategy[str] = _TEXT_CHARS) -> st.SearchStrategy[Any]:
    """Values text-based codecs decode to: None, 64-bit ints, finite floats, strings."""
    return st.one_of(st.none(), ints64, finite_floats, inferred_strings(alphabet))


# ---------------------------------------------------------------- json / msgpack

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), finite_floats, st.text(_TEXT_CHARS, max_size=10)
)
_keys = st.text(_TEXT_CHARS, max_size=6)


def json_documents(scalars: st.SearchStrategy[Any] = json_scalars) -> st.SearchStrategy[Any]:
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
        max_leaves=12,
    )
    return st.dictionaries(_keys, values, max_size=6)


msgpack_scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints64,
    finite_floats,
    st.text(_TEXT_CHARS, max_size=10),
    st.binary(max_size=10),
)
msgpack_documents = json_documents(msgpack_scalars)

# ---------------------------------------------------------------- fix / nvfix


def _tag_values(alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    scalar = inferred_scalars(alphabet)
    return scalar | st.lists(scalar, min_size=2, max_size=3)


_FIX_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x01|")
fix_documents = st.dictionaries(
    st.integers(1, 99_999).map(str), _tag_values(_FIX_CHARS), max_size=8
)
nvfix_documents = st.dictionaries(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x01|="), min_size=1),
    _tag_values(_FIX_CHARS),
    max_size=8,
)

# ---------------------------------------------------------------- xml

xml_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,6}", fullmatch=True)
_xml_leaf = inferred_scalars(_XML_CHARS)
_xml_text = st.one_of(
    ints64,
    finite_floats,
    inferred_strings(_XML_CHARS).filter(lambda s: not s.isspace()),
)
_xml_body_text = st.one_of(
    ints64,
    finite_floats,
    inferred_strings(_XML_CHARS).map(str.strip).filter(lambda s: bool(s) and _self_inferring(s)),
)


def _node(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    attributes = st.dictionaries(xml_names.map(lambda n: "@" + n), _xml_leaf, max_size=3)
    kids = st.dictionaries(
        xml_names, children | st.lists(children, min_size=2, max_size=3), max_size=3
    )

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        node = {**draw(attributes), **draw(kids)}
        if not node:
            node = {"@" + draw(xml_names): draw(_xml_leaf)}
        has_children = any(not k.startswith("@") for k in node)
        if draw(st.booleans()):
            return node
        text = draw(_xml_body_text if has_children else _xml_text)
        return Element(node, text)

    return build()


xml_values = st.recursive(_xml_leaf, _node, max_leaves=10)
xml_documents = st.builds(lambda name, value: {name: value}, xml_names, xml_values)
