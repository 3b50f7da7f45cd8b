"""What a decoded message looks like to the rest of sowlib.

Every codec decodes a message into plain Python values: ``dict`` for objects,
``list`` for arrays, and ``str``/``int``/``float``/``bool``/``None``/``bytes``
scalars. XML elements that carry both attributes (or children) and text decode
to :class:`Element`, a ``dict`` that also remembers its text. Imports nothing
from sowlib.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

__all__ = ["MISSING", "Document", "Element", "Missing", "Scalar", "canonical_text"]

#: A decoded message: nested dicts, lists and scalars.
Document: TypeAlias = Any
#: A leaf value a filter can see.
Scalar: TypeAlias = str | int | float | bool | bytes | None


class Missing(enum.Enum):
    """One-member enum so mypy can narrow ``value is MISSING``."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: Returned by path lookups when the field does not exist.
MISSING = Missing.MISSING


class Element(dict[str, Any]):
    """An XML element that has attributes or children *and* text.

    Behaves as the mapping of its children/attributes (``"@name"`` keys) for
    path steps, and as ``text`` when a path ends on it, so both
    ``/Px`` (the text) and ``/Px/@ccy`` (an attribute) resolve.
    """

    __slots__ = ("text",)

    def __init__(self, items: dict[str, Any] | None = None, text: Any = None) -> None:
        super().__init__(items or {})
        self.text = text

    def __repr__(self) -> str:
        return f"Element({dict.__repr__(self)}, text={self.text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Element):
            return dict.__eq__(self, other) and self.text == other.text
        return dict.__eq__(self, other)

    __hash__ = None  # mutable, like dict


def canonical_text(value: Any) -> str | None:
    """The canonical text of a scalar, or None for NULL (spec §6.3 [R], §7).

    Integers (and integral floats) render without ``.0`` so ``5``, ``5.0`` and
    ``"5"`` agree; other floats use the shortest round-trip form; booleans are
    ``1``/``0``; strings are as-is; ``None``, ``""`` and ``MISSING`` are NULL.
    Arrays use their first element (functions are not array-aware, spec §4).

    Example:
        >>> canonical_text(5.0), canonical_text("abc"), canonical_text(True)
        ('5', 'abc', '1')
    """
    if isinstance(value, list):
        if not value:
            return None
        value = value[0]
    if isinstance(value, Element):
        value = value.text
    if value is None or value is MISSING:
        return None
    if value is True:
        return "1"
    if value is False:
        return "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value.is_integer() and abs(value) < 2**63:
            return str(int(value))
        return repr(value)
    if isinstance(value, bytes):
        text = value.decode("utf-8", "surrogateescape")
        return text or None
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        return None
    return str(value)
