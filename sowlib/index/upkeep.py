"""What index upkeep keeps of each live record: the values of its indexed paths.

An update must take the replaced version out of every index. Rather than reading the
old record back from the log and decoding it, an :class:`~sowlib.index.IndexSet` keeps,
per live key, the value of each path a hash or memo index reads, one table per path
(the topic passes a table that holds ints unboxed where it can). Strings are interned,
so a value repeated over many records is held once. Also loads the optional C form of
the indexes' key moves (:data:`NATIVE_MOVE_KEYS`). Imports only ``index.types`` and
``storage.native``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from itertools import compress, repeat
from operator import and_, eq, is_, is_not, not_
from typing import Any

from sowlib.index.types import Key
from sowlib.storage.native import optional_module

__all__ = [
    "ABSENT",
    "NATIVE_MOVE_KEY",
    "NATIVE_MOVE_KEYS",
    "Changes",
    "KeptValues",
    "MoveKey",
    "MoveKeys",
    "Table",
    "changes",
    "interned",
]

Table = MutableMapping[Key, Any]
"""``key -> value`` of one path for every live key."""


class _Absent:
    """The old value of a key that had no record (an insert)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()

MoveKeys = Callable[
    [dict[Any, Any], list[Any], list[Any], list[Any], Any, Any, Any, Any, Any],
    tuple[int, list[int]],
]
"""``move_keys(mapping, keys, olds, news, old_places, new_places, absent, added, dropped)``:
the C form of a batch of key moves in an index (``sowlib/index/movekeys.c`` says what it
does; the Python loops of ``MemoIndex.move_numbers`` and ``HashIndex.move_strings`` are the
reference, ``tests/index/test_movekeys.py`` holds them together)."""


MoveKey = Callable[[dict[Any, Any], Any, Any, Any, Any, Any], int | None]
"""``move_key(mapping, key, old_place, new_place, added, dropped)``: the C form of one key's
move between two known places (``old_place`` None: a new key); the change in the entry
count, or None when a key set is packed (nothing done). ``HashIndex.move`` and
``MemoIndex.move`` with ``native=None`` are the reference (``tests/index/test_movekeys.py``)."""

_MODULE = optional_module("sowlib.index.movekeys")
NATIVE_MOVE_KEYS: MoveKeys | None = None if _MODULE is None else _MODULE.move_keys
"""The C form of the key moves, or None (not built, or ``SOWLIB_PURE_PYTHON`` set)."""
NATIVE_MOVE_KEY: MoveKey | None = getattr(_MODULE, "move_key", None)
"""The C form of one key's move, or None (as :data:`NATIVE_MOVE_KEYS`)."""


def interned(column: list[Any]) -> list[Any]:
    """``column`` with its strings interned when it holds only strings (values repeat
    over records: each distinct text is then held once); O(n), C-level."""
    if column and set(map(type, column)) == {str}:
        return list(map(sys.intern, column))
    return column


class Changes:
    """Of a batch of distinct keys, one path's old and new values where they differ."""

    __slots__ = ("keys", "new", "old_keys", "old_values")

    def __init__(self, keys: list[Key], new: list[Any], old_keys: list[Key], old: list[Any]):
        #: Keys whose value changed (or was absent), and their new values.
        self.keys, self.new = keys, new
        #: Of those, the keys that had a value, and that value (to take out first).
        self.old_keys, self.old_values = old_keys, old


def changes(keys: Sequence[Key], old: Sequence[Any], new: Sequence[Any]) -> Changes:
    """Where ``new[i]`` differs from ``old[i]`` (another type or another value; an
    ``ABSENT`` old value always differs); C-level passes."""
    same = map(and_, map(is_, map(type, old), map(type, new)), map(bool, map(eq, old, new)))
    moved = list(map(not_, same))
    keys_changed = list(compress(keys, moved))
    new_changed = list(compress(new, moved))
    old_changed = list(compress(old, moved))
    had = list(map(is_not, old_changed, repeat(ABSENT)))
    return Changes(
        keys_changed,
        new_changed,
        list(compress(keys_changed, had)),
        list(compress(old_changed, had)),
    )


class KeptValues:
    """Per indexed path, the value every live key holds there.

    Args:
        table: makes an empty ``key -> value`` table.
    """

    __slots__ = ("_table", "complete", "tables")

    def __init__(self, table: Callable[[], Table]) -> None:
        self._table = table
        #: One table per path, by the path's position in the index set's paths.
        self.tables: dict[Any, Table] = {}
        #: False while the values are not known for every live key (a load that did not
        #: restore them); upkeep then reads the old documents instead.
        self.complete = True

    def table(self, path: Any) -> Table:
        """The table of ``path``, created empty if it has none."""
        got = self.tables.get(path)
        if got is None:
            got = self.tables[path] = self._table()
        return got

    def clear(self) -> None:
        """Forget every value; the values are now known (none)."""
        for table in self.tables.values():
            table.clear()
        self.complete = True

    def fill(self, path: Any, pairs: Iterable[tuple[Key, Any]]) -> None:
        """Set ``key -> value`` in the table of ``path`` for each pair."""
        self.table(path).update(pairs)

    def drop_path(self, path: Any) -> None:
        """Forget the table of a path no index reads any more."""
        self.tables.pop(path, None)
