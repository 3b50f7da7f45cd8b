"""The ``xml`` message type: a hardened lxml parse into dicts, Elements and lists.

Mapping and rendering rules are in ``docs/codecs.md``. Imports only ``errors``,
``document`` and the ``codecs`` helpers; never ``expr`` or ``storage``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Final

import attrs
from lxml import etree

from sowlib.codecs.infer import infer_scalar
from sowlib.codecs.limits import MAX_DEPTH
from sowlib.codecs.merge import merge_documents
from sowlib.codecs.xml_batch import decode_flat_batch, decode_last_shape, remember_shape
from sowlib.codecs.xml_render import render_document
from sowlib.document import Element
from sowlib.errors import DecodeError, UnsupportedOperationError

__all__ = ["XmlCodec", "flat_value"]

_WHITESPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"


def hardened_parser() -> etree.XMLParser:
    """An lxml parser that resolves no entity, loads no DTD and touches no network.

    Shared by the xml codec and the AMPS configuration reader.
    """
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
    )


class _Parsers(threading.local):
    """One parser per thread: an lxml parser must not be used by two threads at once."""

    def __init__(self) -> None:
        self.parser = hardened_parser()
        # An element's attribute values in document order, in one pass: lxml's
        # items()/values() look each value up by name, which is quadratic in the
        # number of attributes (40,000 attributes took seconds).
        self.attribute_values = etree.XPath("@*", smart_strings=False)


_PARSERS = _Parsers()


def _scan_prolog(data: bytes) -> int | None:
    """Find a DOCTYPE before the root element without parsing anything.

    Returns the DOCTYPE's byte offset, ``-1`` when the root element was reached
    without one (the prolog is ASCII-compatible, so this is conclusive), or ``None``
    when the prolog could not be read as ASCII (e.g. UTF-16): then the parsed
    document's docinfo is checked instead. A DOCTYPE can only appear in the prolog,
    so text such as ``<![CDATA[<!DOCTYPE html>]]>`` in the body is not rejected.
    """
    pos = 3 if data.startswith(_UTF8_BOM) else 0
    size = len(data)
    while True:
        while pos < size and data[pos] in _WHITESPACE:
            pos += 1
        if data.startswith(b"<?", pos):
            end = data.find(b"?>", pos + 2)
            if end < 0:
                return None
            pos = end + 2
        elif data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 4)
            if end < 0:
                return None
            pos = end + 3
        elif data.startswith(b"<!", pos):
            # <!DOCTYPE (any case: libxml2 reports it as an error anyway) or worse.
            return pos
        elif data.startswith(b"<", pos):
            return -1
        else:
            return None


def _local(tag: str) -> str:
    # "{namespace}local" -> "local": identifiers use local names (docs/codecs.md).
    return tag if tag[0] != "{" else tag.rpartition("}")[2]


class _TooDeep(Exception):
    """Raised out of the element walk past ``MAX_DEPTH``; ``decode`` reports it."""


#: Above this many attributes an element's values are read in one pass (see _Parsers).
_MANY_ATTRIBUTES = 16


def _attributes(el: Any) -> list[tuple[str, str]]:
    names = el.keys()
    if len(names) <= _MANY_ATTRIBUTES:
        return el.items()  # type: ignore[no-any-return]
    values: list[str] = _PARSERS.attribute_values(el)  # type: ignore[assignment]
    return list(zip(names, values, strict=True))


def _element_value(el: Any, depth: int = 2) -> Any:
    """Decode one element (see :class:`XmlCodec`); O(size of the subtree).

    ``depth`` is the nesting level of the dict this element becomes (the root's
    wrapper dict is level 1).
    """
    # Plain loops instead of el.attrib / helper calls: the walk costs more than the
    # parse, and every proxy object lxml creates shows up (measured).
    attributes = _attributes(el)
    if not attributes and not len(el):
        text = el.text
        return infer_scalar(text) if text else None
    if depth > MAX_DEPTH:
        raise _TooDeep
    node: dict[str, Any] = {}
    for name, value in attributes:
        node["@" + (name if name[0] != "{" else name.rpartition("}")[2])] = infer_scalar(value)
    text = el.text
    pieces = [text] if text else None
    repeated: set[str] | None = None
    for child in el:
        tag = child.tag
        if type(tag) is not str:
            continue  # entity references cannot occur (no DTD), comments/PIs are removed
        if tag[0] == "{":
            tag = tag.rpartition("}")[2]  # identifiers use local names
        value = _element_value(child, depth + 1)
        if tag not in node:
            node[tag] = value
        elif repeated is not None and tag in repeated:
            node[tag].append(value)
        else:
            node[tag] = [node[tag], value]
            repeated = repeated or set()
            repeated.add(tag)
        tail = child.tail
        if tail:
            if pieces is None:
                pieces = [tail]
            else:
                pieces.append(tail)
    if pieces is None:
        return node
    joined = "".join(pieces)
    if joined.isspace():
        return node
    # Whitespace around child elements is layout; text of an attributes-only element is kept.
    return Element(node, infer_scalar(joined.strip() if len(el) else joined))


# A flat document: a root element holding only text-only child elements, no attributes,
# no whitespace between tags, no entity or character references, no CDATA, comments or
# declarations, and no control character (the full parser rejects them) or carriage
# return (it normalises them) in text. Such documents (record-shaped messages) are read
# with two regular expressions instead of building an lxml tree; anything else takes
# the full parser. "]]>" and the non-characters U+FFFE/U+FFFF are checked on the text.
_NAME = rb"[A-Za-z_][A-Za-z0-9_.\-]*"
_FLAT = re.compile(
    rb"<(" + _NAME + rb")>((?:<(" + _NAME + rb")>[^<&\x00-\x08\x0b-\x1f]*</\3>)*)</\1>"
)
# Children of a document ``_FLAT`` accepted (close tags already known to match).
_CHILD = re.compile(r"<([^>]*)>([^<]*)</[^>]*>")


class _Repeated(list[Any]):
    """Marks the lists ``flat_value`` builds for repeated children (values may be lists)."""


def flat_value(raw: bytes) -> dict[str, Any] | None:
    """``decode``'s result for a flat document (see ``_FLAT``), or None for any other."""
    known = decode_last_shape(raw)
    if known is not None:
        return known
    m = _FLAT.fullmatch(raw)
    if m is None:
        return None
    try:
        body = m.group(2).decode("utf-8")
    except UnicodeDecodeError:
        return None  # the full parser reports where
    # Searching str for a character wider than the text's own is O(1) (ASCII text).
    if "]]>" in body or "\ufffe" in body or "\uffff" in body:
        return None
    root = m.group(1).decode("ascii")
    pairs = _CHILD.findall(body)
    if not pairs:
        return {root: None}
    node: dict[str, Any] = dict(
        zip(map(itemgetter(0), pairs), map(infer_scalar, map(itemgetter(1), pairs)), strict=True)
    )
    if len(node) == len(pairs):
        remember_shape(root, tuple(node))  # the next message likely has the same shape
    else:  # a repeated child: a list, in document order
        node = {}
        for tag, text in pairs:
            value = infer_scalar(text)
            if tag not in node:
                node[tag] = value
            elif type(node[tag]) is _Repeated:
                node[tag].append(value)
            else:
                node[tag] = _Repeated((node[tag], value))
        node = {k: list(v) if type(v) is _Repeated else v for k, v in node.items()}
    return {root: node}


def _byte_offset(data: bytes, line: int, column: int) -> int:
    start = 0
    for _ in range(max(line, 1) - 1):
        nl = data.find(b"\n", start)
        if nl < 0:
            break
        start = nl + 1
    return min(start + max(column, 1) - 1, len(data))


@attrs.frozen
class XmlCodec:
    """XML documents; the root element is the first path step (spec §1.4, §15).

    ``<Trade side="B"><Px ccy="USD">12.5</Px><Leg>1</Leg><Leg>2</Leg></Trade>`` decodes to
    ``{"Trade": {"@side": "B", "Px": Element({"@ccy": "USD"}, text=12.5), "Leg": [1, 2]}}``:
    attributes are ``"@name"`` keys, children are keyed by local tag name, a repeated
    child becomes a list, text and attribute values are typed by
    :func:`~sowlib.codecs.infer.infer_scalar`, an element with only text decodes to
    that scalar (``<a/>`` to None), and an element with attributes or children plus
    non-whitespace text decodes to an :class:`~sowlib.document.Element`.

    The parser never resolves entities, loads a DTD or touches the network, and any
    document with a DOCTYPE is rejected before parsing (billion laughs, external
    entities). Comments and processing instructions are ignored.

    Example:
        >>> XmlCodec().decode(b'<Trade side="B"><Px>12.5</Px></Trade>')
        {'Trade': {'@side': 'B', 'Px': 12.5}}
    """

    name: Final = "xml"
    supports_filter: Final = True
    supports_delta: Final = True

    def decode(self, data: bytes) -> dict[str, Any]:
        """Parse one XML document into ``{root_name: value}``.

        Raises:
            DecodeError: malformed XML (offset from the parser's line/column), a
                DOCTYPE or entity declaration (offset of ``<!``), nesting deeper than
                ``MAX_DEPTH``, or non-bytes input. Work is linear in the input,
                attributes included.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError("xml", data, f"expected bytes, got {type(data).__name__}")
        raw = bytes(data)
        flat = flat_value(raw)
        if flat is not None:
            return flat
        prolog = _scan_prolog(raw)
        if prolog is not None and prolog >= 0:
            raise DecodeError(
                "xml", data, "DOCTYPE and entity declarations are not allowed", prolog
            )
        try:
            root = etree.fromstring(raw, _PARSERS.parser)
        except etree.XMLSyntaxError as exc:
            line, column = exc.position
            raise DecodeError("xml", data, exc.msg, _byte_offset(raw, line, column)) from None
        if prolog is None:
            info: Any = root.getroottree().docinfo
            if info.doctype or info.internalDTD is not None:
                raise DecodeError("xml", data, "DOCTYPE and entity declarations are not allowed")
        try:
            return {_local(root.tag): _element_value(root)}
        except _TooDeep:
            raise DecodeError(
                "xml", data, f"the document nests deeper than {MAX_DEPTH} levels (the limit)"
            ) from None

    def decode_many(self, payloads: Sequence[bytes]) -> list[Any]:
        """Parse many messages, as calling :meth:`decode` on each does; O(total bytes).

        The batch publish path: when every message is a flat document of one shape
        (the same root and distinct children in the same order, as record-shaped
        messages are), one regular expression checks and reads the whole batch and
        values are typed column by column; any other batch is decoded message by
        message.

        Raises:
            DecodeError: the first message :meth:`decode` rejects.
        """
        if set(map(type, payloads)) <= {bytes}:
            docs = decode_flat_batch(payloads)
            if docs is not None:
                return docs
        return [self.decode(p) for p in payloads]

    def encode(self, doc: Any) -> bytes:
        """Render ``{root_name: value}`` as UTF-8 XML without a declaration.

        ``decode(encode(doc)) == doc`` for every document ``decode`` produces. Namespaces
        are not written back (decoding keeps local names only).

        Raises:
            EncodeError: not exactly one root key, a bad element/attribute name, a
                nested value in an attribute, or text XML cannot hold.
        """
        return render_document(doc)

    def merge(self, stored: Any, delta: Any) -> Any:
        """Element-by-element merge; attributes and text are identifiers (spec §12.1 [R]).

        Raises:
            UnsupportedOperationError: the delta has a different root element.
        """
        if isinstance(stored, dict) and isinstance(delta, dict) and stored.keys() != delta.keys():
            raise UnsupportedOperationError(
                "delta_publish",
                f"the delta's root element {list(delta)} differs from the stored {list(stored)}",
            )
        return merge_documents(stored, delta, text_nodes=True, message_type="xml")
