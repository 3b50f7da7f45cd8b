"""Memo index: one field's values in sorted order -> SOW keys (spec §7).

Serves equality, ranges, BETWEEN and prefix tests as a superset of what a scan
selects under the comparison rules of spec §2.4, and walks values in the
mixed-type order for ``top_n`` + ``order_by``. Imports only ``paths`` and
``index.values``.
"""

from __future__ import annotations

import array
import heapq
import itertools
from collections.abc import Collection, Iterator, Sequence
from operator import eq
from typing import Any

import attrs

from sowlib.index.numranges import NumberRanges
from sowlib.index.packed import PackedKeys, pack_positions
from sowlib.index.regions import ALL, Interval, Region
from sowlib.index.sortedmap import SortedMap
from sowlib.index.spans import count_in, span, values_in
from sowlib.index.types import Key, KeySet
from sowlib.index.upkeep import ABSENT, NATIVE_MOVE_KEY, NATIVE_MOVE_KEYS, MoveKey, MoveKeys
from sowlib.index.values import KeyGroups, as_path, is_null_scalar, member_keys, to_number
from sowlib.paths import FieldPath

__all__ = ["ALL", "Interval", "MemoIndex", "Region"]


def _mark(keys: set[Key], key: Key, adding: bool) -> None:
    if adding:
        keys.add(key)
    else:
        keys.discard(key)


_ABSENT_TYPE = type(ABSENT)
_NUMBER_OR_ABSENT = frozenset({int, float, _ABSENT_TYPE})


def _true_numbers(values: Sequence[Any]) -> bool:
    """True when every value is an int or a float and none is NaN (C-level passes)."""
    return set(map(type, values)) <= {int, float} and all(map(eq, values, values))


@attrs.define(eq=False)
class MemoIndex:
    """Sorted index over one field; O(log n) per update, O(log n + k) per range.

    Arrays file one entry per element; NULL/missing values are kept apart so
    the index holds every record and can be walked in sort order.

    Example:
        >>> idx = MemoIndex("/price")
        >>> idx.add("a", {"price": 5}); idx.add("b", {"price": "x"})
        >>> sorted(idx.candidates(Region(nums=Interval(lo=1))))
        ['a']
    """

    field: FieldPath = attrs.field(converter=as_path)
    # One sorted map per kind of value: true numbers (booleans as 1/0),
    # non-numeric strings, numeric strings by text and numeric strings by value.
    _nums: SortedMap = attrs.field(factory=SortedMap, init=False)
    _words: SortedMap = attrs.field(factory=SortedMap, init=False)
    _numstrs: SortedMap = attrs.field(factory=SortedMap, init=False)
    _numvals: SortedMap = attrs.field(factory=SortedMap, init=False)
    _null: set[Key] = attrs.field(factory=set, init=False)
    _loose: set[Key] = attrs.field(factory=set, init=False)
    _arrays: set[Key] = attrs.field(factory=set, init=False)
    _entries: list[int] = attrs.field(factory=lambda: [0, 0, 0, 0], init=False)
    # Ranges over ``_nums`` from flat sorted columns; told of every change of ``_nums``.
    _ranges: NumberRanges = attrs.field(factory=NumberRanges, init=False)
    # top_keys' last answer: ((ranges stamp, need, descending), keys)
    _top: tuple[tuple[int, int, bool], list[Key]] | None = attrs.field(default=None, init=False)

    @property
    def name(self) -> str:
        """``memo(/price)``."""
        return f"memo({self.field.to_text()})"

    @property
    def fields(self) -> tuple[FieldPath, ...]:
        """The one indexed field, as a tuple (the :class:`Index` protocol)."""
        return (self.field,)

    @property
    def loose(self) -> set[Key]:
        """Keys whose value no sorted dict can place (NaN, objects, nested arrays)."""
        return self._loose

    # -- maintenance ---------------------------------------------------------

    @staticmethod
    def _places(value: Any) -> list[tuple[int, Any]]:
        """(dict number, key) pairs for one scalar; dict -1 is the loose set."""
        if value is True or value is False:
            return [(0, int(value))]
        if isinstance(value, int | float):
            return [(-1, None)] if value != value else [(0, value)]
        if isinstance(value, str):
            num = to_number(value)
            return [(1, value)] if num is None else [(2, value), (3, num)]
        return [(-1, None)]

    def update(self, key: Key, value: Any, adding: bool) -> None:
        """File (``adding``) or unfile ``key`` under the field value ``value``; O(log n).

        ``value`` is what the field resolves to in the record's document.
        """
        kind = type(value)
        if (kind is int or kind is float) and value == value:
            # The usual case: one true number.
            bucket = self._nums.bucket(value)
            if adding:
                if bucket is None:
                    self._nums.put(value, {key: None})
                elif key not in bucket:
                    bucket[key] = None
                else:
                    return
                self._entries[0] += 1
                self._ranges.note(key, value)
            elif bucket is not None and key in bucket:
                self._ranges.gone(key)
                del bucket[key]
                self._entries[0] -= 1
                if not bucket:
                    self._nums.drop(value)
            return
        if is_null_scalar(value):
            _mark(self._null, key, adding)
            return
        if isinstance(value, list):
            _mark(self._arrays, key, adding)
            items = [v for v in value if not is_null_scalar(v)]
            self._ranges.reset()  # it knows one value per key
        else:
            items = [value]
        dicts = (self._nums, self._words, self._numstrs, self._numvals)
        for item in items:
            for which, place in self._places(item):
                if which < 0:
                    _mark(self._loose, key, adding)
                    continue
                sd = dicts[which]
                bucket = sd.bucket(place)
                if which == 0 and (bucket is None or key not in bucket) == adding:
                    # a boolean, filed as 1/0, that is added or removed
                    self._ranges.note(key, place) if adding else self._ranges.gone(key)
                if adding:
                    if bucket is None:
                        sd.put(place, {key: None})
                        self._entries[which] += 1
                    elif key not in bucket:
                        bucket[key] = None
                        self._entries[which] += 1
                elif bucket is not None and key in bucket:
                    del bucket[key]
                    self._entries[which] -= 1
                    if not bucket:
                        sd.drop(place)

    def add_many(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """``update(key, value, True)`` for each pair, for keys not filed yet (distinct),
        keys grouped by value first: one set update per distinct value (true numbers
        into a filled index: one probe per key, no grouping)."""
        if len(self._nums) and _true_numbers(values):
            nums = self._nums
            get, put, bucket_of = nums.map.get, nums.put, nums.bucket
            for key, value in zip(keys, values, strict=True):
                bucket = get(value)
                if bucket is None:
                    put(value, {key: None})
                elif type(bucket) is dict:
                    bucket[key] = None
                else:
                    bucket_of(value)[key] = None
            self._entries[0] += len(keys)
            self._ranges.note_many(keys, values)
            return
        groups = KeyGroups()
        groups.add(keys, values)
        self.add_groups(groups)

    def add_groups(self, groups: KeyGroups, keys: Sequence[Key] | None = None) -> None:
        """:meth:`add_many` of keys already grouped by value (none filed yet).

        Numbers of every type are merged by value (``1``, ``1.0`` and ``True`` share an
        entry, as :meth:`update` files them); into an empty index they are loaded with one
        sort. Strings are placed once per distinct value; anything else goes through
        :meth:`update`. O(keys + d log d) for d distinct values.

        With ``keys``, the groups hold positions in ``keys`` and a new entry's key set
        stays packed (four bytes per key) until a query or a write first uses it.
        """
        by_type = groups.by_type
        flat: array.array[int] = array.array("I")
        numbers: dict[Any, Sequence[Any]] = {}
        for kind in (int, float, bool):
            for value, members in by_type.get(kind, {}).items():
                if value != value:  # NaN: the loose set
                    self._loose.update(member_keys(members, keys))
                    continue
                place = int(value) if kind is bool else value
                group = numbers.get(place)
                numbers[place] = members if group is None else [*group, *members]
        if numbers and not len(self._nums):
            self._ranges.reset()
            # In value order: the packed key sets then lie in value order in ``flat``
            places = sorted(numbers)
            if keys is None:
                self._nums.load({value: dict.fromkeys(numbers[value]) for value in places})
            else:
                self._nums.load({v: pack_positions(keys, flat, numbers[v]) for v in places})
            self._entries[0] += sum(map(len, numbers.values()))
        else:
            for value, group in numbers.items():
                self._file(0, value, group, keys, flat)
        for value, strings in by_type.get(str, {}).items():
            if value == "":
                self._null.update(member_keys(strings, keys))
            else:
                for which, place in self._places(value):
                    self._file(which, place, strings, keys, flat)
        self._null.update(member_keys(by_type.get(type(None), {}).get(None, ()), keys))
        for member, value in groups.others:
            self.update(member if keys is None else keys[member], value, True)

    def remove_many(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """``update(key, value, False)`` for each pair (distinct keys, each filed under
        its value), keys grouped by value first: one bucket probe per distinct value."""
        groups = KeyGroups()
        groups.add(keys, values)
        by_type = groups.by_type
        for kind in (int, float, bool):
            for value, members in by_type.get(kind, {}).items():
                if value != value:  # NaN: the loose set
                    self._loose.difference_update(members)
                else:
                    self._unfile(0, int(value) if kind is bool else value, members)
        for value, strings in by_type.get(str, {}).items():
            if value == "":
                self._null.difference_update(strings)
            else:
                for which, place in self._places(value):
                    self._unfile(which, place, strings)
        self._null.difference_update(by_type.get(type(None), {}).get(None, ()))
        for key, value in groups.others:
            self.update(key, value, False)

    def move_numbers(
        self,
        keys: Sequence[Key],
        olds: Sequence[Any],
        news: Sequence[Any],
        native: MoveKeys | None = NATIVE_MOVE_KEYS,
    ) -> bool:
        """Refile each key (distinct) from its old value to its new one, both true numbers
        (no NaN; an old value may be ``ABSENT``: a new key); one pass, an unchanged value
        skipped. False (nothing done) when the values are not all such numbers.

        ``native`` is the C form of the pass (None: this method's Python loop, the
        reference); a key whose old or new key set is saved (packed) takes the Python
        step, which unpacks that set.
        """
        if not _true_numbers(news):
            return False
        old_kinds = set(map(type, olds))
        if not old_kinds <= _NUMBER_OR_ABSENT:
            return False
        if old_kinds != {_ABSENT_TYPE} and not all(map(eq, olds, olds)):
            return False  # a NaN
        move = self._move_number
        if native is None:
            count = 0
            for key, was, value in zip(keys, olds, news, strict=True):
                if type(was) is not type(value) or was != value:
                    count += move(key, was, value)
        else:
            keys, olds, news = list(keys), list(olds), list(news)
            added, dropped = self._nums.pending()
            count, later = native(self._nums.map, keys, olds, news, None, None, ABSENT, added,
                                  dropped)  # fmt: skip
            # A key left (a saved, packed key set on its way): the Python step, which
            # unpacks that set for good (SortedMap.bucket).
            for i in later:
                count += move(keys[i], olds[i], news[i])
        self._entries[0] += count
        self._ranges.note_moves(keys, olds, news)
        return True

    def move(
        self, key: Key, was: Any, value: Any, native: MoveKey | None = NATIVE_MOVE_KEY
    ) -> None:
        """Refile ``key`` from the field value ``was`` (``ABSENT``: not filed yet) to
        ``value``, another one: ``update(key, was, False)`` then ``update(key, value,
        True)``, two true numbers in one step (one C call where ``native`` is built)."""
        kind = type(value)
        if (kind is int or kind is float) and value == value:
            old = type(was)
            if was is ABSENT or ((old is int or old is float) and was == was):
                nums, place = self._nums, None if was is ABSENT else was
                pending = nums.pending()
                got = None if native is None else native(nums.map, key, place, value, *pending)
                self._entries[0] += self._move_number(key, was, value) if got is None else got
                self._ranges.note(key, value)
                return
        if was is not ABSENT:
            self.update(key, was, False)
        self.update(key, value, True)

    def _move_number(self, key: Key, was: Any, value: Any) -> int:
        """Refile ``key`` from true number ``was`` (or ``ABSENT``) to true number ``value``
        (another one); the change in the entry count."""
        nums = self._nums
        count = 0
        if was is not ABSENT:
            bucket = nums.bucket(was)
            if bucket is not None and key in bucket:
                del bucket[key]
                count -= 1
                if not bucket:
                    nums.drop(was)
        bucket = nums.bucket(value)
        if bucket is None:
            nums.put(value, {key: None})
        else:
            bucket[key] = None
        return count + 1

    def _unfile(self, which: int, place: Any, members: Sequence[Key]) -> None:
        """Take ``members`` out of the key set under ``place`` in sorted map ``which``."""
        sd = (self._nums, self._words, self._numstrs, self._numvals)[which]
        bucket = sd.bucket(place)
        if bucket is None:
            return
        if which == 0:
            self._ranges.gone_many(members, bucket)
        before = len(bucket)
        pop = bucket.pop
        for key in members:
            pop(key, None)
        self._entries[which] -= before - len(bucket)
        if not bucket:
            sd.drop(place)

    def _file(
        self,
        which: int,
        place: Any,
        members: Sequence[Any],
        keys: Sequence[Key] | None,
        flat: array.array[int],
    ) -> None:
        """File a group under ``place`` in sorted map number ``which``."""
        sd = (self._nums, self._words, self._numstrs, self._numvals)[which]
        if which == 0:
            self._ranges.note_group(member_keys(members, keys), place)
        bucket = sd.bucket(place)
        if bucket is None:
            made = dict.fromkeys(members) if keys is None else pack_positions(keys, flat, members)
            sd.put(place, made)
            self._entries[which] += len(members)
        else:
            before = len(bucket)
            bucket.update(dict.fromkeys(member_keys(members, keys)))
            self._entries[which] += len(bucket) - before

    def add(self, key: Key, doc: Any) -> None:
        """File ``key`` under the field's value(s) in ``doc``; O(log n) per value."""
        self.update(key, self.field.getter(doc), True)

    def remove(self, key: Key, doc: Any) -> None:
        """Undo :meth:`add` for the same ``key`` and ``doc``; O(log n) per value."""
        self.update(key, self.field.getter(doc), False)

    def compact(self) -> None:
        """Re-create every key set at its tightest size (after a bulk build); O(entries)."""
        for sd in (self._nums, self._words, self._numstrs, self._numvals):
            mapping = sd.map
            for value, bucket in mapping.items():
                if type(bucket) is dict:
                    mapping[value] = dict.fromkeys(bucket)  # sized for its length

    def clear(self) -> None:
        """Forget every entry."""
        for sd in (self._nums, self._words, self._numstrs, self._numvals):
            sd.clear()
        for s in (self._null, self._loose, self._arrays):
            s.clear()
        self._entries[:] = [0, 0, 0, 0]
        self._ranges.reset()

    def saved(self) -> tuple[list[dict[Any, KeySet | PackedKeys]], list[set[Key]]]:
        """:meth:`export` with the key sets not used yet left packed (the index's own
        objects: read them, do not change them)."""
        maps = [sd.map for sd in (self._nums, self._words, self._numstrs, self._numvals)]
        places = sorted(maps[0])  # numbers in value order: see ``add_groups``
        maps[0] = dict(zip(places, map(maps[0].__getitem__, places), strict=True))
        return maps, [self._null, self._loose, self._arrays]

    def export(self) -> tuple[list[dict[Any, KeySet]], list[set[Key]], list[int]]:
        """The index's content: its four value maps, the NULL, loose and array key sets,
        and the entry counts (the index's own objects: read them, do not change them)."""
        maps = [sd.unpack_all() for sd in (self._nums, self._words, self._numstrs, self._numvals)]
        return maps, [self._null, self._loose, self._arrays], list(self._entries)

    def restore(self, maps: Sequence[dict[Any, Any]], sets: list[set[Key]]) -> None:
        """Replace the content with what :meth:`export` returned (entry counts recomputed)."""
        mine = (self._nums, self._words, self._numstrs, self._numvals)
        for sd, mapping in zip(mine, maps, strict=True):
            sd.load(mapping)
        self._null, self._loose, self._arrays = sets
        self._entries[:] = [sum(map(len, m.values())) for m in maps]
        self._ranges.reset()

    # -- queries -------------------------------------------------------------

    def _parts(self, region: Region) -> list[tuple[SortedMap, Interval, int]]:
        parts = []
        if region.nums is not None:
            parts.append((self._nums, region.nums, 0))
            if region.by_value:
                parts.append((self._numvals, region.nums, 3))
        if region.texts is not None:
            parts += [(self._words, region.texts, 1), (self._numstrs, region.texts, 2)]
        return parts

    def estimate(self, region: Region) -> int:
        """Candidate count for ``region`` (values x mean fan-out past 64 values); O(log n)."""
        total = len(self._loose) + (len(self._arrays) if region.multi else 0)
        for sd, iv, which in self._parts(region):
            got = self._ranges.count_in(iv) if which == 0 and iv.prefix is None else None
            if got is not None:
                total += got
            elif len(sd):
                total += count_in(sd, iv, self._entries[which])
        if region.words and region.texts is None:
            total += self._entries[1]
        return total

    def candidates(self, region: Region) -> set[Key]:
        """Keys that may satisfy the test ``region`` stands for; O(log n + k).

        Includes the :attr:`loose` keys (and, for ``multi`` regions, every
        record holding an array).
        """
        out = self._loose | self._arrays if region.multi else set(self._loose)
        for sd, iv, _ in self._parts(region):
            values = values_in(sd, iv)
            if values:
                out.update(*map(sd.bucket, values))
        if region.words and region.texts is None:
            for bucket in self._words.unpack_all().values():
                out.update(bucket)
        return out

    def candidate_keys(self, region: Region) -> Collection[Key]:
        """:meth:`candidates` (the reference), as a list where no key can be found twice:
        no record holds an array and ``region`` reaches one sorted map by a range. The
        keys of the values in range are gathered in C passes over their key sets, not a
        call or set insert per value (``SortedMap.keys_between``); elsewhere the set of
        :meth:`candidates`. O(log n + k).
        """
        parts = [(sd, iv) for sd, iv, _ in self._parts(region) if len(sd)]
        words = region.words and region.texts is None and len(self._words)
        if self._arrays or words or len(parts) > 1:
            return self.candidates(region)
        out = list(self._loose)  # a loose scalar sits in no sorted map
        if not parts:
            return out
        sd, iv = parts[0]
        if iv.prefix is not None:
            return self.candidates(region)
        got = self._ranges.keys_in(sd, iv) if sd is self._nums else None
        if got is not None:
            return got if not out else out + got
        lo, hi = span(sd, iv)
        if lo >= hi:
            return out
        # saved key sets are left packed for the sorted columns to read them in one pass
        out += sd.keys_between(lo, hi, keep=sd is not self._nums)
        return out

    def orderable(self) -> bool:
        """True when every record holds one scalar, so :meth:`groups` is a total order."""
        return not self._loose and not self._arrays

    def _numeric_groups(self, descending: bool) -> Iterator[Collection[Key]]:
        """Key sets per numeric value, true numbers and numeric strings merged."""
        # Buckets are unpacked as the walk reaches them (a walk often stops early).
        a, b = self._nums.bucket, self._numvals.bucket
        a_keys = self._nums.ordered()
        if not len(self._numvals):  # the usual case: no numeric strings, no merge needed
            if descending:
                for k in reversed(a_keys):
                    yield a(k)
            else:
                for k in a_keys:
                    yield a(k)
            return
        b_keys = self._numvals.ordered()
        keys = (
            heapq.merge(reversed(a_keys), reversed(b_keys), reverse=True)
            if descending
            else heapq.merge(a_keys, b_keys)
        )
        for value, _ in itertools.groupby(keys):
            yield (a(value) or {}) | (b(value) or {})

    def top_groups(self, need: int, descending: bool = False) -> list[Collection[Key]] | None:
        """The first key sets of :meth:`groups` holding at least ``need`` keys between
        them (all there are when fewer), or None when this index cannot promise that the
        records of each set tie exactly in query order: only true numbers (and booleans,
        filed as 1/0, which tie with them) are served, never a NULL, string or loose value
        the walk would reach. O(log n + need): each value holds at least one key.
        """
        if not self.orderable() or len(self._numvals) or len(self._words):
            return None
        if self._null and descending:
            return None  # the NULL group comes first: its values may not all tie
        nums = self._nums
        ordered = nums.ordered()
        # the first values in order, read off the sorted list's iterators (C-level)
        values = list(itertools.islice(reversed(ordered) if descending else ordered, need))
        out: list[Collection[Key]] = [*map(nums.map.__getitem__, values)]
        if set(map(type, out)) != {dict}:
            out = list(map(nums.bucket, values))  # saved key sets, unpacked once
        sizes = list(map(len, out))
        total = sum(sizes)
        if total < need:
            return None if self._null else out  # the NULL group would be reached
        if total > need:  # the groups up to the one that reaches ``need``
            count = 0
            for at, size in enumerate(sizes):
                count += size
                if count >= need:
                    return out[: at + 1]
        return out

    def top_keys(self, need: int, descending: bool = False) -> list[Key] | None:
        """The keys of :meth:`top_groups` in query order, the keys of each group of several
        put in SOW key order (their text, ``str(key)``: the tie-break), or None as it
        gives. The last answer is kept and given again while the true numbers are as
        they were (the ranges' ``stamp``) and the other values still let it be given
        (top_groups' checks, made each time). O(1) then; else as top_groups."""
        kept = self._top
        stamp = (self._ranges.stamp, need, descending)
        if kept is not None and kept[0] == stamp and not self._loose and not self._arrays:
            keys = kept[1]
            plain = not self._numvals.map and not self._words.map
            if plain and not (self._null and (descending or len(keys) < need)):
                return keys
        groups = self.top_groups(need, descending)
        if groups is None:
            return None
        keys = []
        for group in groups:
            keys += group if len(group) == 1 else sorted(group, key=str)
        self._top = (stamp, keys)
        return keys

    def groups(self, descending: bool = False) -> Iterator[Collection[Key]]:
        """Key sets of equal sort value in mixed-type order (spec §13.3 [R]).

        Numbers (and numeric strings, by value) first, then non-numeric strings
        byte-wise, then NULL/missing; reversed (NULL first) when ``descending``.
        Only meaningful when :meth:`orderable`.
        """
        if descending:
            if self._null:
                yield self._null
            words = self._words.bucket
            for k in reversed(self._words.ordered()):
                yield words(k)
            yield from self._numeric_groups(True)
        else:
            yield from self._numeric_groups(False)
            words = self._words.bucket
            for k in self._words.ordered():
                yield words(k)
            if self._null:
                yield self._null

    def __len__(self) -> int:
        """Number of distinct non-NULL scalar values indexed."""
        return len(self._nums) + len(self._words) + len(self._numstrs)
