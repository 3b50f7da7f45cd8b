"""Ranges over a memo index's true numbers from flat sorted columns (spec §7).

A memo index files each key in a key set per distinct value; a range then visits one
bucket object per value in range (a cache miss each, and most prices are near-unique).
:class:`NumberRanges` keeps beside them a snapshot of every ``(value, key)`` entry in
two flat, parallel lists sorted by value, so a range costs two bisects and one slice,
and a small delta of the changes made since: each changed key's new entry (unsorted
until the next read, then merged into a sorted run) and the set of changed keys, whose
snapshot entries are stale. The delta is folded into a new snapshot once it holds more
than a quarter of the entries, so updates between queries (prices tick) cost O(1)
each when made and O(log n) amortized when read.

It only knows one value per key: the memo index drops it (:meth:`reset`) when a record
holds an array of numbers, and answers from its key sets until it is built again. It
is a cache of the index's true-number map (``tests/index/test_numranges.py`` holds the
two together). Imports only ``index.types``, ``index.packed``, ``index.regions`` and
``index.sortedmap``.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import add, attrgetter, is_, is_not, itemgetter, ne, not_, or_
from typing import Any

from sowlib.index.packed import PackedKeys
from sowlib.index.regions import Interval
from sowlib.index.sortedmap import SortedMap, members
from sowlib.index.types import Key

__all__ = ["NumberRanges"]

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_POSITIONS = attrgetter("positions")
_SOURCE = attrgetter("keys")
_START = attrgetter("start")
_COUNT = attrgetter("count")
# The delta is merged into the snapshot once it holds more than this fraction of the
# snapshot's entries (and at least _MIN_DELTA): a merge costs O(n), C-level passes.
_MERGE_FRACTION = 4
_MIN_DELTA = 1024
# More entries written with no read in between than this fraction of the snapshot's size
# (and _MIN_DELTA) drop the snapshot: a write-only phase keeps no growing delta.
_DROP_FRACTION = 2
# A snapshot is built by the second range read after it was dropped: the first read
# after a reopen is answered from the saved key sets, as it was before.
_COLD_READS = 1
# count_in counts exactly while it looks at no more entries than this.
_EXACT = 4096


def _between(values: Sequence[Any], iv: Interval, key: Any = None) -> tuple[int, int]:
    """Positions ``lo, hi`` of the values inside ``iv`` in sorted ``values``."""
    if iv.lo is None:
        lo = 0
    elif iv.lo_inc:
        lo = bisect.bisect_left(values, iv.lo, key=key)
    else:
        lo = bisect.bisect_right(values, iv.lo, key=key)
    if iv.hi is None:
        hi = len(values)
    elif iv.hi_inc:
        hi = bisect.bisect_right(values, iv.hi, key=key)
    else:
        hi = bisect.bisect_left(values, iv.hi, key=key)
    return lo, max(lo, hi)


class NumberRanges:
    """Sorted ``(value, key)`` columns of one memo index's true numbers, plus changes.

    The memo index reports every change of its true-number entries (:meth:`note`,
    :meth:`gone` and their batch forms; a no-op while no snapshot exists) and asks
    :meth:`keys_in` for a range (None: answer it yourself).

    Example:
        >>> m = SortedMap(); m.put(1.5, {"a": None}); m.put(3, {"b": None})
        >>> r = NumberRanges()
        >>> r.keys_in(m, Interval(1, 2)) is None  # a cold read: the caller answers
        True
        >>> r.keys_in(m, Interval(1, 2))
        ['a']
        >>> r.note("b", 1.75); r.gone("a")
        >>> r.keys_in(m, Interval(1, 2))
        ['b']
    """

    __slots__ = ("_changed", "_cold", "_kept", "_keys", "_pending", "_runs", "_sorted", "_values")

    def __init__(self) -> None:
        self._values: list[Any] | None = None  # None: no snapshot
        self._keys: list[Key] = []
        #: Each key changed since the snapshot -> its live entry, or None (not filed).
        self._changed: dict[Key, tuple[Any, Key] | None] = {}
        self._pending: list[tuple[Any, Key]] = []  # entries not sorted yet
        #: Sorted runs of the entries since the snapshot, each at most half the size of
        #: the one before (a stale entry, of a key changed again, is skipped by reads).
        self._runs: list[list[tuple[Any, Key]]] = []
        self._sorted = 0  # entries in the runs
        self._kept: tuple[Interval, list[Key]] | None = None  # count_in's last keys
        self._cold = 0

    @property
    def built(self) -> bool:
        """True when a snapshot exists (changes are then being recorded)."""
        return self._values is not None

    # -- changes -------------------------------------------------------------

    def reset(self) -> None:
        """Drop the snapshot and its delta (the next reads rebuild it)."""
        self._values = None
        self._keys = []
        self._changed, self._pending, self._runs, self._sorted = {}, [], [], 0
        self._cold, self._kept = 0, None

    def note(self, key: Key, value: Any) -> None:
        """``key`` is now filed under the true number ``value`` (and nowhere else)."""
        if self._values is not None:
            self._kept = None
            entry = (value, key)
            self._changed[key] = entry
            self._pending.append(entry)
            if len(self._pending) > self._limit(_DROP_FRACTION):
                self.reset()

    def note_many(self, keys: Sequence[Key], values: Iterable[Any]) -> None:
        """:meth:`note` for each pair (C-level passes)."""
        if self._values is not None:
            self._kept = None
            entries = list(zip(values, keys, strict=True))
            self._changed.update(zip(keys, entries, strict=True))
            self._pending += entries
            if len(self._pending) > self._limit(_DROP_FRACTION):
                self.reset()

    def note_moves(self, keys: Sequence[Key], olds: Sequence[Any], news: Sequence[Any]) -> None:
        """:meth:`note` for each key whose new value is not its old one (the same number
        of another type counts as another: the key set then files it again)."""
        if self._values is not None:
            types = map(is_not, map(type, olds), map(type, news))
            moved = list(map(or_, types, map(ne, olds, news)))
            self.note_many(list(compress(keys, moved)), compress(news, moved))

    def gone(self, key: Key) -> None:
        """``key`` is no longer filed under any true number."""
        if self._values is not None:
            self._kept = None
            self._changed[key] = None

    def note_group(self, keys: Iterable[Key], value: Any) -> None:
        """:meth:`note` of each of ``keys`` under one ``value``."""
        if self._values is not None:
            news = list(keys)
            self.note_many(news, repeat(value, len(news)))

    def gone_many(self, keys: Iterable[Key], among: Collection[Key]) -> None:
        """:meth:`gone` for each of ``keys`` found in ``among`` (the key set they leave)."""
        if self._values is not None:
            self._kept = None
            self._changed.update(dict.fromkeys(k for k in keys if k in among))

    def _limit(self, fraction: int) -> int:
        return max(_MIN_DELTA, len(self._keys) // fraction)

    # -- reads ---------------------------------------------------------------

    def keys_in(self, numbers: SortedMap, iv: Interval) -> list[Key] | None:
        """Every key filed under a value inside ``iv`` (no prefix), once each, or None
        while there is no snapshot and this is a cold read (the caller answers).

        ``numbers`` is the index's ``value -> key set`` map (key sets may be packed),
        read only to build a snapshot. O(log n + k) once built; a build is O(n log n)
        (O(n) when its sorted values are up to date), a merge O(n) per n/4 changes.
        """
        values = self._values
        if values is None:
            if self._cold < _COLD_READS:
                self._cold += 1
                return None
            added, dropped = numbers.pending()
            ordered = sorted(numbers.map) if added or dropped else numbers.ordered()
            self._build(numbers.map, ordered)
        else:
            self._settle()
            kept, self._kept = self._kept, None
            if kept is not None and kept[0] == iv:
                return kept[1]
        return self._found(iv)

    def _found(self, iv: Interval) -> list[Key]:
        """:meth:`keys_in` of a settled snapshot."""
        values = self._values
        assert values is not None
        lo, hi = _between(values, iv)
        found = self._keys[lo:hi]
        changed = self._changed
        if not changed:
            return found
        keep = list(map(not_, map(changed.__contains__, found)))
        get = changed.get
        later = []
        for run in self._runs:
            dlo, dhi = _between(run, iv, _FIRST)
            if dlo < dhi:
                later += [e for e in run[dlo:dhi] if get(e[1]) is e]
        if not later:
            return found if all(keep) else list(compress(found, keep))
        # In value order, as the key sets give them: a value's keys as they were filed
        # (one stable C sort of two sorted runs: the runs' entries are in filing order).
        now = [*compress(values[lo:hi], keep), *map(_FIRST, later)]
        keys = [*compress(found, keep), *map(_SECOND, later)]
        return list(map(keys.__getitem__, sorted(range(len(now)), key=now.__getitem__)))

    def count_in(self, iv: Interval) -> int | None:
        """Keys inside ``iv``, or None when there is no snapshot. Exact, O(log n), with
        no change since the snapshot; else exact up to :data:`_EXACT` entries looked at
        (the keys are kept for the :meth:`keys_in` that follows), an upper bound past it
        (entries of keys changed since counted)."""
        if self._values is None:
            return None
        self._settle()
        lo, hi = _between(self._values, iv)
        if not self._changed:
            return hi - lo
        for run in self._runs:
            dlo, dhi = _between(run, iv, _FIRST)
            hi += dhi - dlo
        if hi - lo > _EXACT:
            return hi - lo
        found = self._found(iv)
        self._kept = (iv, found)
        return len(found)

    def _settle(self) -> None:
        """Sort the pending entries into a run; merge into the snapshot when many."""
        if self._pending:
            runs, run = self._runs, self._pending
            run.sort(key=_FIRST)
            self._sorted += len(run)
            self._pending = []
            # Two runs of similar size become one (two sorted runs: a linear merge), so
            # there are O(log n) runs and each entry is re-sorted O(log n) times.
            while runs and len(runs[-1]) <= 2 * len(run):
                run = runs.pop() + run
                run.sort(key=_FIRST)
            runs.append(run)
        if len(self._changed) + self._sorted > self._limit(_MERGE_FRACTION):
            self._merge()

    def _merge(self) -> None:
        """A new snapshot: the entries of unchanged keys and the live delta entries."""
        changed, keys, values = self._changed, self._keys, self._values
        assert values is not None
        keep = list(map(not_, map(changed.__contains__, keys)))
        get = changed.get
        live = [e for run in self._runs for e in run if get(e[1]) is e]
        # One sorted run, then the live entries: one C sort of positions merges them.
        all_values = [*compress(values, keep), *map(_FIRST, live)]
        all_keys = [*compress(keys, keep), *map(_SECOND, live)]
        order = sorted(range(len(all_values)), key=all_values.__getitem__)
        self._values = list(map(all_values.__getitem__, order))
        self._keys = list(map(all_keys.__getitem__, order))
        self._changed, self._runs, self._sorted = {}, [], 0

    def _build(self, mapping: Mapping[Any, Any], ordered: Iterable[Any]) -> list[Any]:
        """The snapshot of ``mapping`` (saved key sets read in place, not unpacked)."""
        values = list(ordered)
        sets = list(map(mapping.__getitem__, values))
        kinds = set(map(type, sets))
        counts: Iterable[int] = map(len, sets)
        run = _one_run(sets) if kinds == {PackedKeys} else None
        if run is not None:
            keys, counts = run
        elif kinds <= {dict}:
            keys = list(chain.from_iterable(sets))
        else:
            keys = list(chain.from_iterable(map(members, sets)))
        self._values = list(chain.from_iterable(map(repeat, values, counts)))
        self._keys = keys
        self._changed, self._pending, self._runs, self._sorted = {}, [], [], 0
        return self._values


def _one_run(sets: list[PackedKeys]) -> tuple[list[Key], list[int]] | None:
    """The keys and counts of saved key sets lying one after the other in one column (an
    index saved or loaded in value order), in C passes; None when they do not."""
    if not sets:
        return None
    first = sets[0]
    same = map(is_, map(_POSITIONS, sets), repeat(first.positions))
    if not all(same) or not all(map(is_, map(_SOURCE, sets), repeat(first.keys))):
        return None
    starts = list(map(_START, sets))
    counts = list(map(_COUNT, sets))
    ends = list(map(add, starts, counts))
    if starts[1:] != ends[:-1]:
        return None
    return list(map(first.keys.__getitem__, first.positions[starts[0] : ends[-1]])), counts
