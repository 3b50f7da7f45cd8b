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

__all__ = ["MISSING", "Document", "Element", "Missing", "Scalar"]

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

    __hash__ = None  # type: ignore[assignment]  # mutable, like dict
