"""How stored values and filter literals become index keys (spec §2.4, §7).

Both index kinds must return a *superset* of what a full scan selects, so every
value that the comparison rules could make equal to a literal is filed under a
key the lookup will try. Also groups keys by value for a bulk index build (in C where
built). Imports only ``document``, ``paths``, ``expr.runtime``, ``storage.native`` and
``index.types``.
"""

from __future__ import annotations

import array
import functools
import itertools
import math
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from typing import Any, cast

from sowlib.document import MISSING, canonical_text
from sowlib.expr.operators import SAFE_INT
from sowlib.expr.runtime import parse_number
from sowlib.index.types import Key
from sowlib.paths import FieldPath, parse_path
from sowlib.storage.native import optional_module

__all__ = [
    "EXACT_LIMIT",
    "KeyGroups",
    "all_below",
    "as_path",
    "as_paths",
    "Loose",
    "NATIVE_GROUP_POSITIONS",
    "hash_texts",
    "is_null_scalar",
    "literal_texts",
    "member_keys",
    "number_text",
    "to_number",
]

#: Integers at or beyond this magnitude lose precision when promoted to float
#: (spec §2.4 row 3), so text equality and numeric equality can disagree: such
#: values are never filed under a text key and such literals never use a lookup.
EXACT_LIMIT = SAFE_INT


def as_path(path: str | FieldPath) -> FieldPath:
    """A :class:`FieldPath` from its text (or itself)."""
    return path if isinstance(path, FieldPath) else parse_path(path)


def as_paths(paths: Iterable[str | FieldPath]) -> tuple[FieldPath, ...]:
    """A tuple of :class:`FieldPath` from texts or paths."""
    return tuple(as_path(p) for p in paths)


class Loose(Exception):
    """Raised by :func:`hash_texts` for a value no text key can stand for."""


def to_number(text: str) -> int | float | None:
    """The number a string converts to under spec §2.2, or None; O(1) past the bound.

    The evaluator's own conversion, so indexes and filters always agree: text
    longer than ``expr.runtime.MAX_NUMBER_TEXT`` is a string, an integer beyond
    the float range an infinity; never raises.

    Example:
        >>> to_number("05"), to_number("2.5e1"), to_number("abc")
        (5, 25.0, None)
    """
    return parse_number(text)


def is_null_scalar(value: Any) -> bool:
    """True for the values spec §2.3 calls NULL: missing, None, ``""``, ``[]``."""
    return value is None or value is MISSING or value == "" or value == []


def number_text(value: int | float) -> str | None:
    """Canonical text of a number whose text equality is exact, else None.

    NaN, infinities and magnitudes at or above :data:`EXACT_LIMIT` return None.
    """
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if abs(value) >= EXACT_LIMIT:
        return None
    return canonical_text(value)


# Hash keys carry a one-letter tag so a lookup returns exactly the values equal
# to the literal: "s" a string's own text, "n" a number's canonical text, "m" a
# numeric string's number (it equals number literals, not string literals).


def _scalar_texts(value: Any) -> list[str]:
    """Tagged text keys one stored scalar is filed under; raises :class:`Loose`."""
    if value is True or value is False:
        return ["n1" if value else "n0"]
    if isinstance(value, int | float):
        text = number_text(value)
        if text is None:
            raise Loose
        return ["n" + text]
    if isinstance(value, str):
        num = to_number(value)
        if num is None:
            return ["s" + value]
        text = number_text(num)
        if text is None:
            raise Loose
        return ["s" + value, "m" + text]
    raise Loose


# The memo holds strings up to this length only, so it stays at tens of MB however long
# the field values are.
_MEMO_TEXT = 128


@functools.lru_cache(maxsize=1 << 16)
def _str_texts(value: str) -> tuple[str, ...]:
    """:func:`_scalar_texts` of a string, memoised (field values repeat a lot)."""
    return tuple(_scalar_texts(value))


def hash_texts(value: Any) -> Sequence[str]:
    """Every tagged text key a stored field value is filed under in a hash index.

    A string that converts to a number is filed under its own text *and* its
    number, so ``"05"`` is found by the literal ``5`` (spec §2.4 row 4).
    Array values are filed under every element (comparisons are array-aware).
    O(1) for a string or an integer (strings are memoised), O(elements) for arrays.

    Returns:
        The keys; empty for NULL (NULL never equals anything).
    Raises:
        Loose: the value (a NaN, a huge integer, an object, bytes) must be
            verified on every lookup instead.
    """
    kind = type(value)
    if kind is str:
        if len(value) > _MEMO_TEXT:
            return _scalar_texts(value)  # long values: not kept alive by the memo
        return _str_texts(value) if value else ()
    if kind is int and -EXACT_LIMIT < value < EXACT_LIMIT:
        return ("n" + str(value),)
    if is_null_scalar(value):
        return []
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, list):
                raise Loose
            if not is_null_scalar(item):
                out.extend(_scalar_texts(item))
        return out
    return _scalar_texts(value)


def literal_texts(value: Any) -> list[str] | None:
    """Tagged keys whose values equal ``field = value`` exactly, or None if no lookup can.

    A number finds numbers and numeric strings of equal value; a string finds
    strings with the same bytes and, when it converts, numbers of its value;
    NULL finds nothing.

    Example:
        >>> literal_texts(5), literal_texts("05"), literal_texts("x")
        (['n5', 'm5'], ['s05', 'n5'], ['sx'])
    """
    if is_null_scalar(value):
        return []
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, int | float):
        text = number_text(value)
        return None if text is None else ["n" + text, "m" + text]
    num = to_number(value)
    if num is None:
        return ["s" + value]
    text = number_text(num)
    return None if text is None else ["s" + value, "n" + text]


GroupPositions = Callable[[list[Any], int], tuple[list[Any], bytes, bytes]]
"""``group_positions(values, start)``: the positions ``start + i`` grouped by
``values[i]`` (values of one plain type): the distinct values in order of first
appearance, each one's count and the positions, value after value, as native u32."""


def _load_group_positions() -> GroupPositions | None:
    module = optional_module("sowlib.index.movekeys")
    return None if module is None else cast("GroupPositions", module.group_positions)


NATIVE_GROUP_POSITIONS: GroupPositions | None = _load_group_positions()
"""The C form of :class:`KeyGroups`' grouping of positions (``index/movekeys.c``), or
None (not built, or ``SOWLIB_PURE_PYTHON`` set); the Python loop is its reference."""


def _load_u32_below() -> Callable[[array.array[int], int], bool] | None:
    module = optional_module("sowlib.index.movekeys")
    return (
        None
        if module is None
        else cast("Callable[[array.array[int], int], bool]", module.u32_below)
    )


_U32_BELOW = _load_u32_below()


def all_below(column: array.array[int], bound: int) -> bool:
    """True when every position of an ``array("I")`` column is below ``bound`` (one C
    pass where built; ``max`` is the reference)."""
    if _U32_BELOW is not None and column.typecode == "I":
        return _U32_BELOW(column, bound)
    return not column or max(column) < bound


# Values a bulk build groups: hashable, and equal only to values of the same type with
# the same index keys (1 == 1.0 == True, so each type keeps its own groups).
_GROUPED = frozenset({str, int, float, bool, type(None)})


class KeyGroups:
    """Keys grouped by their field value, gathered over many batches, so a bulk index
    build files each distinct value once (one set per value, sized for its keys).

    The members grouped are keys, or (``positions=True``) positions of keys in a list,
    held in ``array("I")`` columns (see the indexes' ``add_groups``). Values of a plain
    type (str, int, float, bool, None) are grouped per type, then by value; any other
    value (lists, objects, MISSING) is kept beside its member. O(1) per member, one
    C-level type check per batch.

    Example:
        >>> groups = KeyGroups()
        >>> groups.add(["a", "b", "c"], ["x", "y", "x"])
        >>> groups.by_type[str]
        {'x': ['a', 'c'], 'y': ['b']}
    """

    __slots__ = ("_new", "by_type", "others")

    def __init__(self, positions: bool = False) -> None:
        #: ``{type: {value: members}}`` for values of a plain type.
        self.by_type: dict[type, dict[Any, MutableSequence[Any]]] = {}
        #: ``(member, value)`` for every other value.
        self.others: list[tuple[Any, Any]] = []
        self._new: Callable[[Any], MutableSequence[Any]] = _positions if positions else _keys

    def add(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        """Group each member (key or position) under its value, both in the same order."""
        kinds = set(map(type, values))
        new = self._new
        if len(kinds) == 1:
            kind = kinds.pop()
            if kind in _GROUPED:
                same = self.by_type.setdefault(kind, {})
                native = NATIVE_GROUP_POSITIONS
                if (
                    native is not None
                    and new is _positions
                    and type(keys) is range
                    and keys.step == 1
                    and type(values) is list
                ):
                    _merge(same, *native(values, keys.start))
                else:
                    _group(same, keys, values, new)
                return
        by_type, others = self.by_type, self.others
        for key, value in zip(keys, values, strict=True):
            kind = type(value)
            if kind in _GROUPED:
                groups = by_type.get(kind)
                if groups is None:
                    groups = by_type[kind] = {}
                group = groups.get(value)
                if group is None:
                    groups[value] = new(key)
                else:
                    group.append(key)
            else:
                others.append((key, value))


def _merge(
    groups: dict[Any, MutableSequence[Any]], distinct: list[Any], counts: bytes, flat: bytes
) -> None:
    """Add :data:`NATIVE_GROUP_POSITIONS`' groups to ``groups`` (each an ``array("I")``
    slice of one column)."""
    column: array.array[int] = array.array("I")
    column.frombytes(flat)
    sizes: array.array[int] = array.array("I")
    sizes.frombytes(counts)
    ends = list(itertools.accumulate(sizes))
    members = map(column.__getitem__, map(slice, [0, *ends[:-1]], ends))
    if not groups:
        groups.update(zip(distinct, members, strict=True))
        return
    get = groups.get
    for value, part in zip(distinct, members, strict=True):
        group = get(value)
        if group is None:
            groups[value] = part
        else:
            group.extend(part)


def _keys(key: Any) -> list[Any]:
    return [key]


def _positions(position: int) -> array.array[int]:
    return array.array("I", (position,))


def member_keys(members: Iterable[Any], keys: Sequence[Key] | None) -> Iterable[Key]:
    """The keys a :class:`KeyGroups` group's members stand for: the members themselves,
    or (given ``keys``) the keys at those positions."""
    if keys is None:
        return members
    return map(keys.__getitem__, members)


def _group(
    groups: dict[Any, MutableSequence[Any]],
    keys: Sequence[Any],
    values: Sequence[Any],
    new: Callable[[Any], MutableSequence[Any]],
) -> None:
    get = groups.get
    for key, value in zip(keys, values, strict=True):
        group = get(value)
        if group is None:
            groups[value] = new(key)
        else:
            group.append(key)
