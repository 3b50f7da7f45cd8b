"""Render decoded XML documents back to bytes (the inverse of ``xml_codec`` decoding).

String building rather than an lxml tree: small messages are mostly per-tree overhead.
Imports only ``errors``, ``document`` and ``codecs.infer``; never ``expr`` or ``storage``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from lxml import etree

from sowlib.codecs.infer import render_scalar
from sowlib.document import Element
from sowlib.errors import EncodeError

__all__ = ["render_document"]

# Characters XML 1.0 cannot hold at all (even escaped).
_INVALID_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\r": "&#13;",
        "\n": "&#10;",
        "\t": "&#9;",
    }
)


class _Fail(Exception):
    """Internal: carries the reason up to :func:`render_document`."""


@lru_cache(maxsize=4096)
def _valid_name(name: str) -> bool:
    # lxml applies the XML Name production; colons are refused because decoding keeps
    # local names only and a prefix would need a namespace declaration.
    if not name or ":" in name:
        return False
    try:
        etree.Element(name)
    except ValueError:
        return False
    return True


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _valid_name(name):
        raise _Fail(f"{name!r} is not a valid XML name")
    return name


def _escape_text(text: str) -> str:
    # str.translate with a mapping works character by character; most texts need nothing.
    if "&" in text or "<" in text or ">" in text or "\r" in text:
        return text.translate(_TEXT_ESCAPES)
    return text


def _text(value: Any, where: str) -> str | None:
    """Text for a scalar; invalid XML characters are checked once on the whole output."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return str(value)
    if isinstance(value, dict | list | tuple):
        raise _Fail(f"{where} holds a {type(value).__name__}; it needs a scalar")
    try:
        return render_scalar(value)
    except ValueError as exc:
        raise _Fail(f"{where}: {exc}") from None


def _render(tag: str, value: Any, out: list[str]) -> None:
    if isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, list | tuple):
                raise _Fail(f"<{tag}> holds a list inside a list")
            _render(tag, item, out)
        return
    if not isinstance(value, dict):
        text = _text(value, tag)
        if text:
            out.append(f"<{tag}>{_escape_text(text)}</{tag}>")
        else:
            out.append(f"<{tag}/>")
        return
    out.append("<" + tag)
    children: list[tuple[str, Any]] = []
    for key, item in value.items():
        if isinstance(key, str) and key.startswith("@"):
            name = _check_name(key[1:])
            text = _text(item, f"attribute {key!r} of <{tag}>")
            out.append(f' {name}="{(text or "").translate(_ATTR_ESCAPES)}"')
        else:
            children.append((_check_name(key), item))
    body = _text(value.text, f"<{tag}>") if isinstance(value, Element) else None
    if not children and not body:
        out.append("/>")
        return
    out.append(">")
    if body:
        out.append(_escape_text(body))
    for name, item in children:
        _render(name, item, out)
    out.append(f"</{tag}>")


def render_document(doc: Any) -> bytes:
    """Render ``{root_name: value}`` as UTF-8 XML; O(size of the document).

    Attributes (``"@name"`` keys) are written first, then children in dict order, a
    list as repeated elements, an Element's text before its children, and None or
    ``""`` as an empty element. Floats use their shortest round-trip form and booleans
    ``true``/``false``.

    Raises:
        EncodeError: not a dict with exactly one key, a bad name, a nested value in an
            attribute, a list of lists, or text XML cannot hold (control characters,
            NaN).
    """
    if not isinstance(doc, dict) or len(doc) != 1:
        raise EncodeError("xml", doc, "an XML document is a dict with exactly one root key")
    ((root, value),) = doc.items()
    out: list[str] = []
    try:
        if isinstance(value, list | tuple):
            raise _Fail("the root element cannot repeat")
        _render(_check_name(root), value, out)
    except (_Fail, RecursionError) as exc:
        raise EncodeError("xml", doc, str(exc) or type(exc).__name__) from None
    text = "".join(out)
    if _INVALID_CHARS.search(text):
        raise EncodeError("xml", doc, "a text or attribute holds a character XML cannot hold")
    return text.encode("utf-8")
