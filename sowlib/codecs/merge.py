"""Delta-publish merge of two decoded documents (spec §12.1 and its nested-object [R] rule).

One recursive function shared by every codec that supports deltas. Imports only
``document``, ``errors`` and ``codecs.limits``; never ``expr`` or ``storage``.
"""

from __future__ import annotations

from typing import Any

from sowlib.codecs.limits import MAX_DEPTH
from sowlib.document import Element
from sowlib.errors import DecodeError

__all__ = ["copy_document", "merge_documents"]

#: Value types that are never containers (a flat document holds only these).
_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def copy_document(doc: Any) -> Any:
    """Copy the containers (dicts, Elements, lists) of ``doc``; scalars are shared.

    O(number of nodes). The merge result must never alias the stored record or the
    delta, or a later in-place change to one would silently change the other.
    """
    if isinstance(doc, dict):
        items = {k: copy_document(v) for k, v in doc.items()}
        if isinstance(doc, Element):
            return Element(items, doc.text)
        return items
    if isinstance(doc, list):
        return [copy_document(v) for v in doc]
    return doc


def _text_of(node: Any) -> Any:
    """The text value of an XML node: an Element's text, a scalar itself, else None."""
    if isinstance(node, Element):
        return node.text
    if isinstance(node, dict | list):
        return None
    return node


def _xml_node(children: dict[str, Any], text: Any) -> Any:
    """Normalise to the shape the XML decoder produces for (children, text)."""
    if not children:
        return text
    if text is None:
        return children
    return Element(children, text)


def merge_documents(
    stored: Any, delta: Any, *, text_nodes: bool = False, message_type: str = "document"
) -> Any:
    """Merge ``delta`` into ``stored`` and return a new document (spec §12.1).

    Rules: a field in the delta replaces the stored one; fields absent from the delta
    stay; new fields are added after the stored ones (so FIX/NVFIX tag order is the
    stored order followed by new tags); objects present on both sides merge
    recursively down to the leaves; arrays and scalars are replaced wholesale (for XML
    that is "repeated elements are replaced as a group"); an object replaced by a
    scalar, or a scalar by an object, is replaced wholesale. A delta never removes a
    field. Neither argument is modified and the result shares no container with them.

    With ``text_nodes=True`` (XML) an element's text is one more identifier next to its
    attributes and children: a delta ``<Px>13</Px>`` sets the text of a stored
    ``<Px ccy="USD">12</Px>`` and keeps the attribute, and a delta ``<Px ccy="EUR"/>``
    keeps the stored text.

    O(size of the delta + size of the stored containers on merged paths). Decoded
    documents nest at most ``MAX_DEPTH`` levels, which the recursion handles; a
    deeper hand-built document is refused.

    Raises:
        DecodeError: a document too deep to merge (named by ``message_type``).

    Example:
        >>> merge_documents({"a": {"x": 0, "y": 2}, "n": [1]}, {"a": {"x": 1}, "n": [5]})
        {'a': {'x': 1, 'y': 2}, 'n': [5]}
    """
    if not text_nodes and type(stored) is dict and type(delta) is dict:
        kinds = set(map(type, stored.values()))
        kinds.update(map(type, delta.values()))
        if kinds <= _SCALARS:
            # Flat documents (the usual delta): one C-level merge, nothing to copy.
            return {**stored, **delta}
    try:
        return _merge(stored, delta, text_nodes)
    except RecursionError:
        raise DecodeError(
            message_type,
            None,
            f"the document nests too deep to merge (decoded documents stop at {MAX_DEPTH})",
        ) from None


def _merge(stored: Any, delta: Any, text_nodes: bool) -> Any:
    if isinstance(stored, dict) and isinstance(delta, dict):
        merged = {k: copy_document(v) for k, v in stored.items()}
        for key, value in delta.items():
            if key in merged:
                merged[key] = _merge(merged[key], value, text_nodes)
            else:
                merged[key] = copy_document(value)
        if not text_nodes:
            return merged
        text = delta.text if isinstance(delta, Element) else _text_of(stored)
        return _xml_node(merged, text)
    if text_nodes and isinstance(stored, dict) and not isinstance(delta, list):
        # A bare text value in the delta sets the element's text and keeps the rest.
        return _xml_node({k: copy_document(v) for k, v in stored.items()}, delta)
    if text_nodes and isinstance(delta, dict) and not isinstance(stored, list):
        # Attributes/children added to an element that only had text keep that text.
        text = delta.text if isinstance(delta, Element) else stored
        return _xml_node(copy_document(dict(delta)), text)
    return copy_document(delta)
