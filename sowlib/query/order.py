"""Ordering query results (spec §13.4): ``order_by`` parsed into sort keys.

Imports ``errors``, ``expr.runtime`` and ``paths``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import attrs

from sowlib.errors import FieldPathError, QueryOptionError
from sowlib.expr import runtime
from sowlib.paths import FieldPath, parse_path

__all__ = ["OrderBy", "OrderKey"]


class _Rev:
    """Inverts the order of a sort component (for DESC keys inside one tuple)."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Rev) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rev) and bool(self.v == other.v)

    __hash__ = None  # type: ignore[assignment]


_NULL = (1,)  # sorts after every (0, key): NULL last ascending, first descending
_ORDER_TERM = re.compile(r"\s*(\[[^\]]*\]|[^\s,]+)((?:\s+[A-Za-z]+)*)\s*(?:,|\Z)")


@attrs.frozen
class OrderKey:
    """One ``identifier [ASC|DESC] [TEXT]`` term of an OrderBy."""

    path: FieldPath
    descending: bool = False
    text: bool = False

    def plain(self, doc: Any) -> Any:
        """This term's ascending sort component for ``doc`` (NULL last, spec §13.3 [R]).

        Native tuples only, so sorts compare them in C; a DESC term sorts on
        the same component with ``reverse=True``.
        """
        return self.plain_value(self.path.getter(doc))

    def plain_value(self, value: Any) -> Any:
        """:meth:`plain` of a document whose value at this term's path is ``value``."""
        kind = type(value)
        if self.text:
            if kind is str and value:
                return (0, value)
            text = runtime.text_of(value)
            return _NULL if text is None else (0, text)
        if (kind is int or kind is float) and value == value:
            return (0, (0, value, ""))
        return _NULL if runtime.first(value) is None else (0, runtime.order_key(value))

    def component(self, doc: Any) -> Any:
        """This term's sort component for ``doc`` (NULL placed per spec §13.3 [R])."""
        comp = self.plain(doc)
        return _Rev(comp) if self.descending else comp

    def to_text(self) -> str:
        """``/a DESC TEXT``."""
        out = self.path.to_text() + (" DESC" if self.descending else " ASC")
        return out + (" TEXT" if self.text else "")


@attrs.frozen
class OrderBy:
    """A parsed OrderBy (spec §13.3): ``/region ASC, /total DESC, /code DESC TEXT``.

    Mixed-type order: numbers (and strings that convert) numerically, then NaN,
    then other strings byte-wise; NULL/missing last ascending, first
    descending; arrays sort by their first element; ties by SOW key ascending.

    Example:
        >>> [k.to_text() for k in OrderBy.parse("/a, /b desc text").keys]
        ['/a ASC', '/b DESC TEXT']
    """

    keys: tuple[OrderKey, ...]

    @classmethod
    def parse(cls, text: str) -> OrderBy:
        """Parse ``key [ASC|DESC] [TEXT], ...``; the last texts parsed are kept (an
        OrderBy is immutable), so a query repeated does not parse again.

        Raises:
            QueryOptionError: empty text, a bad field path or an unknown modifier.
        """
        if type(text) is str:
            return _parse_text(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> OrderBy:
        if not isinstance(text, str) or not text.strip():
            raise QueryOptionError("order_by", text, "expected '/field [ASC|DESC] [TEXT], ...'")
        keys: list[OrderKey] = []
        pos = 0
        while pos < len(text):
            m = _ORDER_TERM.match(text, pos)
            if m is None or m.end() == pos:
                raise QueryOptionError(
                    "order_by", text, f"cannot read a sort key at column {pos + 1}"
                )
            try:
                path = parse_path(m.group(1))
            except FieldPathError as exc:
                raise QueryOptionError("order_by", text, str(exc)) from None
            words = [w.upper() for w in m.group(2).split()]
            desc = text_mode = False
            if words and words[0] in ("ASC", "DESC"):
                desc = words.pop(0) == "DESC"
            if words and words[0] == "TEXT":
                text_mode = bool(words.pop(0))
            if words and words[0] in ("ASC", "DESC") and text_mode:
                desc = words.pop(0) == "DESC"  # "/x TEXT DESC" is accepted too
            if words:
                raise QueryOptionError("order_by", text, f"unknown modifier {words[0]!r}")
            keys.append(OrderKey(path, desc, text_mode))
            pos = m.end()
            if text[m.end() - 1 : m.end()] == "," and not text[pos:].strip():
                raise QueryOptionError("order_by", text, "trailing comma")
        return cls(tuple(keys))

    def sort_key(self, doc: Any, sow_key: str) -> tuple[Any, ...]:
        """A key whose ascending order is this OrderBy's order; SOW key breaks ties."""
        return (*(k.component(doc) for k in self.keys), sow_key)

    def to_text(self) -> str:
        """Canonical text, e.g. ``/a ASC, /b DESC TEXT``."""
        return ", ".join(k.to_text() for k in self.keys)


@functools.lru_cache(maxsize=256)
def _parse_text(text: str) -> OrderBy:
    return OrderBy._parse(text)
