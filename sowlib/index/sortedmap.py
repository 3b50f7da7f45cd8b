"""A dict whose keys are also kept in sorted order, brought up to date lazily.

Memo indexes change on every publish but are read only by queries, so writes
touch only the dict and a set of pending key changes; the sorted key list
catches up on the next read, one key at a time or with one C sort when many
keys changed. Imports only ``sortedcontainers`` and ``index.packed``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from sortedcontainers import SortedList

from sowlib.index.packed import PackedKeys

__all__ = ["SortedMap", "members"]

# Applying pending changes key by key costs O(log n) each in Python; a full
# re-sort costs O(n log n) in C. Re-sort once this many times fewer keys changed.
_RESORT_RATIO = 16


def members(keys: Any) -> Iterable[Any]:
    """The keys of a key set, or of a saved, packed one without unpacking it."""
    if type(keys) is PackedKeys:
        return map(keys.keys.__getitem__, keys.positions[keys.start : keys.start + keys.count])
    return keys  # type: ignore[no-any-return]


class SortedMap:
    """Mapping of sortable keys to values with a lazily maintained key order.

    Writes are O(1) (a dict write and a set update); the first ordered read
    after writes costs O(p log n) for p changed keys, or one O(n log n) C sort
    when that is cheaper. Keys must be mutually comparable (all numbers or all
    strings).

    Example:
        >>> m = SortedMap(); m.put(3, "c"); m.put(1, "a")
        >>> list(m.ordered()), m.map[3]
        ([1, 3], 'c')
    """

    __slots__ = ("_added", "_dropped", "_sorted", "map")

    def __init__(self) -> None:
        #: The mapping itself: read it directly (``map.get``, ``map[k]``), but
        #: add and remove keys only through :meth:`put` and :meth:`drop`.
        self.map: dict[Any, Any] = {}
        self._sorted = SortedList()
        self._added: set[Any] = set()
        self._dropped: set[Any] = set()

    def __len__(self) -> int:
        return len(self.map)

    def put(self, key: Any, value: Any) -> None:
        """Map ``key`` (absent until now) to ``value``; O(1)."""
        self.map[key] = value
        if key in self._dropped:
            self._dropped.discard(key)
        else:
            self._added.add(key)

    def drop(self, key: Any) -> None:
        """Remove ``key`` (present); O(1)."""
        del self.map[key]
        if key in self._added:
            self._added.discard(key)
        else:
            self._dropped.add(key)

    def pending(self) -> tuple[set[Any], set[Any]]:
        """The keys put and dropped since the last ordered read (the map's own sets): a
        caller changing :attr:`map` itself notes each put and drop here as :meth:`put`
        and :meth:`drop` do (the C form of the memo index's key moves)."""
        return self._added, self._dropped

    def bucket(self, key: Any) -> Any:
        """The value of ``key`` (None when absent); a saved, packed key set is unpacked
        now and kept as a set."""
        value = self.map.get(key)
        if type(value) is PackedKeys:
            value = self.map[key] = value.unpack()
        return value

    def keys_between(self, lo: int, hi: int, keep: bool = True) -> list[Any]:
        """Every member of the key sets of the values at sorted positions ``lo`` to ``hi``,
        value after value (a list: the caller knows no member is filed twice), gathered in
        C passes, not a call per value; saved, packed key sets among them are unpacked
        (and, with ``keep``, kept so) first, as :meth:`bucket` does. O(log n + members).
        """
        values = self.ordered()[lo:hi]
        sets = list(map(self.map.__getitem__, values))
        if set(map(type, sets)) != {dict}:
            if not keep:
                return list(itertools.chain.from_iterable(map(members, sets)))
            sets = list(map(self.bucket, values))
        return list(itertools.chain.from_iterable(sets))

    def unpack_all(self) -> dict[Any, Any]:
        """The mapping with every packed key set unpacked."""
        for key, value in self.map.items():
            if type(value) is PackedKeys:
                self.map[key] = value.unpack()
        return self.map

    def ordered(self) -> SortedList:
        """The keys in ascending order (do not modify it); O(1) when nothing changed."""
        if self._added or self._dropped:
            self._catch_up()
        return self._sorted

    def _catch_up(self) -> None:
        changed = len(self._added) + len(self._dropped)
        if changed * _RESORT_RATIO < len(self._sorted):
            remove = self._sorted.remove
            for key in self._dropped:
                remove(key)
            self._sorted.update(self._added)
        else:
            self._sorted = SortedList(self.map)
        self._added.clear()
        self._dropped.clear()

    def load(self, mapping: dict[Any, Any]) -> None:
        """Replace the content with ``mapping`` (taken as it is); one C sort."""
        self.map = mapping
        self._sorted = SortedList(mapping)
        self._added.clear()
        self._dropped.clear()

    def clear(self) -> None:
        """Forget every key."""
        self.map.clear()
        self._sorted = SortedList()
        self._added.clear()
        self._dropped.clear()
