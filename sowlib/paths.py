"""Field paths: ``/order/price``, ``/items[0]``, ``/Trade/@side``, ``[/unit price]``.

A :class:`FieldPath` parses once and resolves against decoded documents (see
:mod:`sowlib.document`). Imports only ``errors`` and ``document``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import attrs

from sowlib.document import MISSING, Element
from sowlib.errors import FieldPathError

__all__ = ["FieldPath", "Step", "parse_path"]

_PLAIN_STEP = re.compile(r"@?[A-Za-z0-9_][A-Za-z0-9_.\-:]*\Z")
_INDEX = re.compile(r"\[(\d+)\]")


@attrs.frozen
class Step:
    """One ``/name`` component, optionally followed by ``[n]`` (zero-based)."""

    name: str
    index: int | None = None

    def to_text(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"


def _collect(values: list[Any], name: str) -> Any:
    """Apply a name step to every element of an array (spec §4, [R] 14)."""
    out: list[Any] = []
    for item in values:
        if isinstance(item, dict):
            got = item.get(name, MISSING)
            if got is MISSING:
                continue
            if isinstance(got, list):
                out.extend(got)
            else:
                out.append(got)
        elif isinstance(item, list):
            got = _collect(item, name)
            if isinstance(got, list):
                out.extend(got)
    return out if out else MISSING


def _resolve_steps(steps: tuple[Step, ...], doc: Any) -> Any:
    cur = doc
    for step in steps:
        if isinstance(cur, dict):
            cur = cur.get(step.name, MISSING)
        elif isinstance(cur, list):
            cur = _collect(cur, step.name)
        else:
            return MISSING
        if cur is MISSING:
            return MISSING
        if step.index is not None:
            if isinstance(cur, list):
                if step.index >= len(cur):
                    return MISSING
                cur = cur[step.index]
            elif step.index != 0:
                # A single occurrence behaves as a one-element array (XML/FIX).
                return MISSING
    if isinstance(cur, Element):
        return cur.text
    return cur


@attrs.frozen(cache_hash=True)
class FieldPath:
    """A parsed field path.

    Example:
        >>> FieldPath.parse("/order/price").resolve({"order": {"price": 5}})
        5
    """

    steps: tuple[Step, ...]
    _getter: Callable[[Any], Any] = attrs.field(eq=False, repr=False, hash=False, init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_getter", _make_getter(self.steps))

    def __reduce__(self) -> tuple[Any, ...]:
        # the resolver is a closure (it does not pickle): pickle the steps, rebuild it
        return (FieldPath, (self.steps,))

    @staticmethod
    def parse(text: str) -> FieldPath:
        """Parse ``/a/b[0]``, ``/a/@attr`` or bracketed ``[/any text]``; cached.

        Raises:
            FieldPathError: the text is not a field path.
        """
        return parse_path(text)

    def resolve(self, doc: Any) -> Any:
        """Return the value at this path in ``doc``, or ``MISSING``; O(depth)."""
        return self._getter(doc)

    @property
    def getter(self) -> Callable[[Any], Any]:
        """The resolver function itself (``getter(doc)`` is ``resolve(doc)``), for hot loops."""
        return self._getter

    @property
    def names(self) -> tuple[str, ...]:
        """The step names without indexes."""
        return tuple(s.name for s in self.steps)

    def to_text(self) -> str:
        """Canonical text; bracketed when a step needs it."""
        if all(_PLAIN_STEP.match(s.name) for s in self.steps):
            return "".join("/" + s.to_text() for s in self.steps)
        return "[" + "".join("/" + s.to_text() for s in self.steps) + "]"

    def __str__(self) -> str:
        return self.to_text()


def _make_getter(steps: tuple[Step, ...]) -> Callable[[Any], Any]:
    # Fast path for the common shape (plain names, dicts all the way down):
    # a chain of subscripts, falling back to the general walk on any surprise.
    if steps and all(s.index is None for s in steps):
        names = tuple(s.name for s in steps)
        if len(names) == 1:
            (n0,) = names

            def get1(doc: Any) -> Any:
                if type(doc) is dict:
                    v = doc.get(n0, MISSING)
                    if type(v) is not Element:
                        return v
                return _resolve_steps(steps, doc)

            return get1
        if len(names) == 2:
            n0, n1 = names

            def get2(doc: Any) -> Any:
                if type(doc) is dict:
                    inner = doc.get(n0)
                    if type(inner) is dict:
                        v = inner.get(n1, MISSING)
                        if type(v) is not Element:
                            return v
                    elif inner is None and n0 not in doc:
                        return MISSING
                return _resolve_steps(steps, doc)

            return get2

    def general(doc: Any) -> Any:
        return _resolve_steps(steps, doc)

    return general


def _parse_steps(text: str, body: str, base: int, bracketed: bool) -> tuple[Step, ...]:
    if not body.startswith("/"):
        raise FieldPathError(text, base, "a field path starts with '/'")
    steps: list[Step] = []
    pos = 1
    for raw in body[1:].split("/"):
        name, index = raw, None
        if not bracketed or raw.endswith("]"):
            m = _INDEX.search(raw)
            if m and m.end() == len(raw):
                name, index = raw[: m.start()], int(m.group(1))
        if not name:
            raise FieldPathError(text, base + pos, "empty step (use '/a/b', not '//')")
        if not bracketed and ("[" in name or "]" in name or " " in name):
            raise FieldPathError(text, base + pos, "use the bracketed form [/...] for this name")
        steps.append(Step(name, index))
        pos += len(raw) + 1
    return tuple(steps)


@lru_cache(maxsize=4096)
def parse_path(text: str) -> FieldPath:
    """Parse a field path (see :meth:`FieldPath.parse`)."""
    if not isinstance(text, str):
        raise FieldPathError(repr(text), 0, "a field path is a string")
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        return FieldPath(_parse_steps(text, stripped[1:-1], 1, True))
    return FieldPath(_parse_steps(text, stripped, 0, False))
