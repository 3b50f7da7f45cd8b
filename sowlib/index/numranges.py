"""Ranges over a memo index's true numbers from flat sorted columns (spec §7).

A memo index files each key in a key set per distinct value; a range then visits one
bucket object per value in range (a cache miss each, and most prices are near-unique).
:class:`NumberRanges` keeps beside them a snapshot of every ``(value, key)`` entry in
two flat, parallel lists sorted by value, so a range costs two bisects and one slice,
and a small delta of the changes made since: each changed key's new entry (unsorted
until the next read, then merged into a sorted run) and the set of changed keys, whose
snapshot entries are stale. The delta is folded into a new snapshot once it holds more
than an eighth of the entries, so updates between queries (prices tick) cost O(1)
each when made and O(log n) amortized when read. Where changes outnumber what the reads
gain (a merge costs about one key-set visit per entry), the snapshot is dropped
instead and the key sets serve the reads for a while.

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
from operator import add, attrgetter, eq, is_, is_not, ne, not_, or_
from typing import Any

from sowlib.index.packed import PackedKeys
from sowlib.index.regions import Interval
from sowlib.index.sortedmap import SortedMap, members
from sowlib.index.types import Key

__all__ = ["NumberRanges"]

_Run = tuple[list[Any], list[Key], list[int]]
_POSITIONS = attrgetter("positions")
_SOURCE = attrgetter("keys")
_START = attrgetter("start")
_COUNT = attrgetter("count")
# The delta is merged into the snapshot once it holds more than this fraction of the
# snapshot's entries (and at least _MIN_DELTA): a merge costs O(n), C-level passes.
_MERGE_FRACTION = 8
_MIN_DELTA = 1024
# More entries written with no read in between than this fraction of the snapshot's size
# (and _MIN_DELTA) drop the snapshot: a write-only phase keeps no growing delta.
_DROP_FRACTION = 2
# A snapshot is built by the second range read after it was dropped: the first read
# after a reopen is answered from the saved key sets, as it was before.
_COLD_READS = 1
# Dropped for too many changes per read (see _settle), a snapshot is built again once
# the key sets have served reads of this many times its entries in values: reads cost
# about what a build would have saved them, then the build is paid (a rent-or-buy
# choice, within twice the better of the two whatever comes next).
_WAIT_ENTRIES = 1
# count_in counts exactly while it looks at no more entries than this.
_EXACT = 4096


def _between(values: Sequence[Any], iv: Interval) -> tuple[int, int]:
    """Positions ``lo, hi`` of the values inside ``iv`` in sorted ``values``."""
    if iv.lo is None:
        lo = 0
    elif iv.lo_inc:
        lo = bisect.bisect_left(values, iv.lo)
    else:
        lo = bisect.bisect_right(values, iv.lo)
    if iv.hi is None:
        hi = len(values)
    elif iv.hi_inc:
        hi = bisect.bisect_right(values, iv.hi)
    else:
        hi = bisect.bisect_left(values, iv.hi)
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

    __slots__ = (
        "_changed", "_count", "_kept", "_keys", "_pending", "_per_value", "_runs", "_served",
        "_sorted", "_values", "_wait", "stamp",
    )  # fmt: skip

    def __init__(self) -> None:
        self._values: list[Any] | None = None  # None: no snapshot
        self._keys: list[Key] = []
        #: Each key changed since the snapshot -> the number of its live entry (entries
        #: are numbered as noted), or -1 (not filed).
        self._changed: dict[Key, int] = {}
        self._count = 0  # entries noted since the snapshot
        #: The entries not sorted yet: values, keys (numbered from ``_count - len``).
        self._pending: tuple[list[Any], list[Key]] = ([], [])
        #: Sorted runs (values, keys, numbers) of the entries since the snapshot, each
        #: at most half the size of the one before, older first (an entry of a key
        #: changed again since is stale: reads skip it). Lists, not a tuple per entry:
        #: no object for the cyclic collector to track per change.
        self._runs: list[_Run] = []
        self._sorted = 0  # entries in the runs
        self._kept: tuple[Interval, list[Key]] | None = None  # count_in's last keys
        #: Values in range the key sets must still serve before a snapshot is built.
        self._wait = _COLD_READS
        self._served = 0  # keys returned since the snapshot was made
        self._per_value = 1  # keys per distinct value when the snapshot was built
        #: Counts the changes told (snapshot or not): the index's true numbers are as they
        #: were while it is the same (what a reader of them may keep answers by).
        self.stamp = 0

    @property
    def built(self) -> bool:
        """True when a snapshot exists (changes are then being recorded)."""
        return self._values is not None

    # -- changes -------------------------------------------------------------

    def reset(self, wait: int = _COLD_READS) -> None:
        """Drop the snapshot and its delta; the key sets serve reads of ``wait`` values
        in all (at least one read) before it is built again."""
        self.stamp += 1
        self._values = None
        self._keys = []
        self._clear()
        self._wait = wait

    def _clear(self) -> None:
        self._changed, self._count, self._pending = {}, 0, ([], [])
        self._runs, self._sorted, self._kept, self._served = [], 0, None, 0

    def note(self, key: Key, value: Any) -> None:
        """``key`` is now filed under the true number ``value`` (and nowhere else)."""
        self.stamp += 1
        if self._values is not None:
            self._kept = None
            self._changed[key] = self._count
            self._count += 1
            values, keys = self._pending
            values.append(value)
            keys.append(key)
            if len(keys) > self._limit(_DROP_FRACTION):
                self.reset()

    def note_many(self, keys: Sequence[Key], values: Iterable[Any]) -> None:
        """:meth:`note` for each pair (C-level passes)."""
        self.stamp += 1
        if self._values is not None:
            self._kept = None
            start = self._count
            self._count += len(keys)
            self._changed.update(zip(keys, range(start, self._count), strict=True))
            pending_values, pending_keys = self._pending
            pending_values += values
            pending_keys += keys
            if len(pending_values) != len(pending_keys):
                raise ValueError("as many values as keys are needed")
            if len(pending_keys) > self._limit(_DROP_FRACTION):
                self.reset()

    def note_moves(self, keys: Sequence[Key], olds: Sequence[Any], news: Sequence[Any]) -> None:
        """:meth:`note` for each key whose new value is not its old one (the same number
        of another type counts as another: the key set then files it again)."""
        self.stamp += 1
        if self._values is not None:
            types = map(is_not, map(type, olds), map(type, news))
            moved = list(map(or_, types, map(ne, olds, news)))
            self.note_many(list(compress(keys, moved)), compress(news, moved))

    def gone(self, key: Key) -> None:
        """``key`` is no longer filed under any true number."""
        self.stamp += 1
        if self._values is not None:
            self._kept = None
            self._changed[key] = -1

    def note_group(self, keys: Iterable[Key], value: Any) -> None:
        """:meth:`note` of each of ``keys`` under one ``value``."""
        self.stamp += 1
        if self._values is not None:
            news = list(keys)
            self.note_many(news, repeat(value, len(news)))

    def gone_many(self, keys: Iterable[Key], among: Collection[Key]) -> None:
        """:meth:`gone` for each of ``keys`` found in ``among`` (the key set they leave)."""
        self.stamp += 1
        if self._values is not None:
            self._kept = None
            self._changed.update(dict.fromkeys([k for k in keys if k in among], -1))

    def _limit(self, fraction: int) -> int:
        return max(_MIN_DELTA, len(self._keys) // fraction)

    # -- reads ---------------------------------------------------------------

    def keys_in(self, numbers: SortedMap, iv: Interval) -> list[Key] | None:
        """Every key filed under a value inside ``iv`` (no prefix), once each, or None
        while there is no snapshot and this is a cold read (the caller answers).

        ``numbers`` is the index's ``value -> key set`` map (key sets may be packed),
        read only to build a snapshot. O(log n + k) once built; a build is O(n log n)
        (O(n) when its sorted values are up to date), a merge O(n) per n/8 changes.
        """
        values = self._values
        if values is None:
            if self._wait > 0:
                lo, hi = _between(numbers.ordered(), iv)  # as the key sets' read does
                self._wait -= max(1, hi - lo)
                return None
            added, dropped = numbers.pending()
            ordered = sorted(numbers.map) if added or dropped else numbers.ordered()
            self._build(numbers.map, ordered)
        else:
            self._settle()
            kept, self._kept = self._kept, None
            if kept is not None and kept[0] == iv:
                self._served += len(kept[1])
                return kept[1]
            if self._values is None:  # dropped by _settle
                return None
        found = self._found(iv)
        self._served += len(found)
        return found

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
        later_values: list[Any] = []
        later_keys: list[Key] = []
        for run_values, run_keys, run_numbers in self._runs:
            dlo, dhi = _between(run_values, iv)
            if dlo < dhi:
                run_keys = run_keys[dlo:dhi]
                live = list(map(eq, map(changed.__getitem__, run_keys), run_numbers[dlo:dhi]))
                later_values += compress(run_values[dlo:dhi], live)
                later_keys += compress(run_keys, live)
        if not later_keys:
            return found if all(keep) else list(compress(found, keep))
        # In value order, as the key sets give them: a value's keys as they were filed
        # (one stable C sort of sorted runs: the runs' entries are in filing order).
        now = [*compress(values[lo:hi], keep), *later_values]
        keys = [*compress(found, keep), *later_keys]
        return list(map(keys.__getitem__, sorted(range(len(now)), key=now.__getitem__)))

    def count_in(self, iv: Interval) -> int | None:
        """Keys inside ``iv``, or None when there is no snapshot. Exact, O(log n), with
        no change since the snapshot; else exact up to :data:`_EXACT` entries looked at
        (the keys are kept for the :meth:`keys_in` that follows), an upper bound past it
        (entries of keys changed since counted)."""
        if self._values is None:
            return None
        self._settle()
        if self._values is None:  # dropped
            return None
        lo, hi = _between(self._values, iv)
        if not self._changed:
            return hi - lo
        for run in self._runs:
            dlo, dhi = _between(run[0], iv)
            hi += dhi - dlo
        if hi - lo > _EXACT:
            return hi - lo
        found = self._found(iv)
        self._kept = (iv, found)
        return len(found)

    def _settle(self) -> None:
        """Sort the pending entries into a run; merge into the snapshot when many."""
        values, keys = self._pending
        if keys:
            first = self._count - len(keys)
            self._pending = ([], [])
            self._sorted += len(keys)
            runs = self._runs
            run = _sorted_run(values, keys, list(range(first, self._count)))
            # Two runs of similar size become one (sorted runs: a linear merge), so
            # there are O(log n) runs and each entry is re-sorted O(log n) times.
            while runs and len(runs[-1][0]) <= 2 * len(run[0]):
                older = runs.pop()
                run = _sorted_run(older[0] + run[0], older[1] + run[1], older[2] + run[2])
            runs.append(run)
        if len(self._changed) + self._sorted > self._limit(_MERGE_FRACTION):
            # A merge costs about as much as reading one key set per entry; the reads
            # since the last one saved one key set per value they returned. Fewer than
            # that (many changes per read): the key sets serve better for a while.
            entries = len(self._keys)
            if self._served // self._per_value >= entries:
                self._merge()
            else:
                self.reset(wait=_WAIT_ENTRIES * entries)

    def _merge(self) -> None:
        """A new snapshot: the entries of unchanged keys and the live delta entries."""
        changed, keys, values = self._changed, self._keys, self._values
        assert values is not None
        keep = list(map(not_, map(changed.__contains__, keys)))
        all_values = list(compress(values, keep))
        all_keys = list(compress(keys, keep))
        for run_values, run_keys, run_numbers in self._runs:
            live = list(map(eq, map(changed.__getitem__, run_keys), run_numbers))
            all_values += compress(run_values, live)
            all_keys += compress(run_keys, live)
        # Sorted runs, older first: one stable C sort of positions merges them.
        order = sorted(range(len(all_values)), key=all_values.__getitem__)
        self._values = list(map(all_values.__getitem__, order))
        self._keys = list(map(all_keys.__getitem__, order))
        self._clear()

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
        self._per_value = max(1, len(keys) // max(1, len(values)))
        self._clear()
        return self._values


def _sorted_run(values: list[Any], keys: list[Key], numbers: list[int]) -> _Run:
    """The three parallel lists ordered by value (a stable sort: ties keep their order)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    take = [list(map(column.__getitem__, order)) for column in (values, keys, numbers)]
    return take[0], take[1], take[2]


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
