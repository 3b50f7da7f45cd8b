"""Hash index: a tuple of canonical field texts -> the SOW keys holding them (spec §7).

Answers exact equality / IN over a fixed field set. It only ever proposes
candidates; the planner re-checks each one with the full filter. Imports only
``paths`` and ``index.values``.
"""

from __future__ import annotations

import array
import functools
import itertools
from collections.abc import Collection, Iterable, Sequence
from typing import Any, cast

import attrs

from sowlib.index.packed import PackedKeys, PendingKeys, pack_positions
from sowlib.index.types import Key, KeySet
from sowlib.index.upkeep import ABSENT, NATIVE_MOVE_KEY, NATIVE_MOVE_KEYS, MoveKey, MoveKeys
from sowlib.index.values import (
    KeyGroups,
    Loose,
    as_paths,
    hash_texts,
    literal_texts,
    member_keys,
)
from sowlib.paths import FieldPath

__all__ = ["HashIndex"]

#: Above this many text combinations a record is kept in the verify-always set.
_MAX_COMBOS = 64


@functools.lru_cache(maxsize=1 << 16)
def _str_entries(value: str) -> tuple[tuple[str], ...] | None:
    """:meth:`HashIndex.entries` of one non-empty string, memoised (values repeat)."""
    try:
        return tuple((text,) for text in hash_texts(value))
    except Loose:
        return None


_STR_OR_ABSENT = frozenset({str, type(ABSENT)})
# A saved key set of at most this many keys is unpacked by the first batch that moves
# keys in or out of it (cheap at this size); a larger one keeps its changes beside it.
_UNPACK_MAX = 4096


def _strings(values: Sequence[Any]) -> bool:
    """True when every value is a non-empty string (C-level passes)."""
    return set(map(type, values)) <= {str} and all(values)


@attrs.define(eq=False)
class HashIndex:
    """Exact-match index over one or more fields; O(1) per update and lookup.

    Example:
        >>> idx = HashIndex(["/region"])
        >>> idx.add("k1", {"region": "EU"})
        >>> sorted(idx.lookup([["EU"]]))
        ['k1']
    """

    fields: tuple[FieldPath, ...] = attrs.field(converter=as_paths)
    # A bucket is a key set; a saved one stays packed until used (PendingKeys: written
    # but not read yet).
    _map: dict[tuple[str, ...], KeySet | PackedKeys | PendingKeys] = attrs.field(
        factory=dict, init=False
    )
    # Records whose values have no exact text form (NaN, huge integers,
    # objects): every lookup returns them so the filter decides.
    _loose: set[Key] = attrs.field(factory=set, init=False)

    @property
    def loose(self) -> set[Key]:
        """Keys every lookup returns because their values have no exact text."""
        return self._loose

    @property
    def name(self) -> str:
        """``hash(/a,/b)``."""
        return "hash(" + ",".join(f.to_text() for f in self.fields) + ")"

    def entries(self, values: Sequence[Any]) -> Sequence[tuple[str, ...]] | None:
        """Text tuples a record holding ``values`` (one per field) is filed under.

        None means the verify-always set; ``[]`` means nowhere (a NULL field).
        """
        if len(values) == 1:
            value = values[0]
            if type(value) is str and value:
                return _str_entries(value)
            try:
                texts = hash_texts(value)
            except Loose:
                return None
            if len(texts) == 1:
                return [(texts[0],)]
            return [(t,) for t in dict.fromkeys(texts)] if len(texts) <= _MAX_COMBOS else None
        per_field: list[Sequence[str]] = []
        size = 1
        try:
            for value in values:
                texts = hash_texts(value)
                if not texts:
                    return []
                per_field.append(texts)
                size *= len(texts)
        except Loose:
            return None
        if size > _MAX_COMBOS:
            return None
        if size == 1:
            return [tuple(t[0] for t in per_field)]
        return list(set(itertools.product(*per_field)))

    def values_of(self, doc: Any) -> tuple[Any, ...]:
        """The indexed fields' values in ``doc``, in index order."""
        return tuple(path.getter(doc) for path in self.fields)

    def add(self, key: Key, doc: Any) -> None:
        """File ``key`` under the values ``doc`` holds; O(1) (O(elements) for arrays)."""
        self.add_entries(key, self.entries(self.values_of(doc)))

    def remove(self, key: Key, doc: Any) -> None:
        """Undo :meth:`add` for the same ``key`` and ``doc``; O(1)."""
        self.remove_entries(key, self.entries(self.values_of(doc)))

    def add_entries(self, key: Key, entries: Sequence[tuple[str, ...]] | None) -> None:
        """File ``key`` under ``entries`` (from :meth:`entries`); O(len(entries))."""
        if entries is None:
            self._loose.add(key)
            return
        index = self._map
        for entry in entries:
            bucket = self._write_bucket(entry)
            if bucket is None:
                index[entry] = {key: None}
            else:
                bucket[key] = None

    def add_many(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """:meth:`add_entries` of each key (none filed yet) under its one field ``value``
        (single-field indexes), keys grouped by value first: one set update per value
        (non-empty strings into a filled index: one probe per key, no grouping)."""
        if self._map and _strings(values):
            index, bucket_of, texts = self._map, self._write_bucket, _str_entries
            for key, value in zip(keys, values, strict=True):
                entries = texts(value)
                if entries is None:
                    self._loose.add(key)
                    continue
                for entry in entries:
                    bucket = index.get(entry)
                    if bucket is None:
                        index[entry] = {key: None}
                    elif type(bucket) is dict:
                        bucket[key] = None
                    else:
                        cast("KeySet | PendingKeys", bucket_of(entry))[key] = None
            return
        groups = KeyGroups()
        groups.add(keys, values)
        self.add_groups(groups)

    def add_groups(self, groups: KeyGroups, keys: Sequence[Key] | None = None) -> None:
        """:meth:`add_many` of keys already grouped by value (none filed yet); a new
        bucket is one set sized for its keys. O(keys + distinct values).

        With ``keys``, the groups hold positions in ``keys`` and a new bucket stays packed
        (four bytes per key) until a query or a write first uses it.
        """
        index = self._map
        flat: array.array[int] = array.array("I")
        for values in groups.by_type.values():
            for value, members in values.items():
                entries = self.entries((value,))
                if entries is None:
                    self._loose.update(member_keys(members, keys))
                    continue
                for entry in entries:
                    bucket = self._write_bucket(entry)
                    if bucket is not None:
                        bucket.update(dict.fromkeys(member_keys(members, keys)))
                    elif keys is None:
                        index[entry] = dict.fromkeys(members)
                    else:
                        index[entry] = pack_positions(keys, flat, members)
        for member, value in groups.others:
            key = member if keys is None else keys[member]
            self.add_entries(key, self.entries((value,)))

    def remove_many(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """:meth:`remove_entries` of each key (distinct, filed) under its one field
        ``value`` (single-field indexes), keys grouped by value first: one bucket probe
        per value. O(keys + distinct values)."""
        groups = KeyGroups()
        groups.add(keys, values)
        index = self._map
        for by_value in groups.by_type.values():
            for value, members in by_value.items():
                filed = self.entries((value,))
                if filed is None:
                    self._loose.difference_update(members)
                    continue
                for text in filed:
                    bucket = self._write_bucket(text)
                    if bucket is not None:
                        pop = bucket.pop
                        for key in members:
                            pop(key, None)
                        if not bucket:
                            del index[text]
        for key, value in groups.others:
            self.remove_entries(key, self.entries((value,)))

    def move_strings(
        self,
        keys: Sequence[Key],
        olds: Sequence[Any],
        news: Sequence[str],
        native: MoveKeys | None = NATIVE_MOVE_KEYS,
    ) -> bool:
        """Refile each key (distinct) from its old value to its new one, both non-empty
        strings (an old value may be ``ABSENT``: a new key); one pass, an unchanged value
        skipped. False (nothing done) when the values are not all such strings.

        ``native`` is the C form of the pass (None: this method's Python loop, the
        reference); a key it leaves (a value filed under several texts or none, a packed
        key set) takes the Python path.
        """
        if not (_strings(news) and set(map(type, olds)) <= _STR_OR_ABSENT and "" not in olds):
            return False
        move = self._move_string
        if native is None:
            for key, was, value in zip(keys, olds, news, strict=True):
                if was != value:
                    move(key, was, value)
            return True
        keys, olds, news = list(keys), list(olds), list(news)
        texts = _str_entries
        # ABSENT (a new key) has no texts (None), and the C form reads no place for it.
        _, later = native(self._map, keys, olds, news, list(map(texts, olds)),
                          list(map(texts, news)), ABSENT, None, None)  # fmt: skip
        if later:
            # Keys left: a saved key set on their way (the small ones are unpacked now
            # and those keys moved in C after all), or a value filed under several texts.
            keys = [keys[i] for i in later]
            olds = [olds[i] for i in later]
            news = [news[i] for i in later]
            self._unpack_small(news)
            self._unpack_small(olds)
            _, later = native(self._map, keys, olds, news, list(map(texts, olds)),
                              list(map(texts, news)), ABSENT, None, None)  # fmt: skip
            for i in later:
                move(keys[i], olds[i], news[i])
        return True

    def _unpack_small(self, values: Sequence[Any]) -> None:
        """Unpack the saved key sets the strings ``values`` are filed under, those of at
        most ``_UNPACK_MAX`` keys, before a batch of moves changes them: the C pass moves
        keys between key sets, and leaves a saved one to the Python path. A larger saved
        set keeps its changes beside it until a read (:meth:`_write_bucket`)."""
        index = self._map
        for value in set(values):
            if type(value) is not str:
                continue
            for entry in _str_entries(value) or ():
                bucket = index.get(entry)
                if type(bucket) is PendingKeys:
                    saved = bucket.base.count
                elif type(bucket) is PackedKeys:
                    saved = bucket.count
                else:
                    continue
                if saved <= _UNPACK_MAX:
                    keys = bucket.unpack()
                    if keys:
                        index[entry] = keys
                    else:
                        del index[entry]

    def move(
        self, key: Key, was: Any, value: Any, native: MoveKey | None = NATIVE_MOVE_KEY
    ) -> None:
        """Refile ``key`` from the field value ``was`` (``ABSENT``: not filed yet) to
        ``value``, another one (single-field indexes): :meth:`remove_entries` then
        :meth:`add_entries`, two non-empty strings in one step (one C call where
        ``native``, the C form, is built and each is filed under one text)."""
        if type(value) is str and value and (was is ABSENT or (type(was) is str and was)):
            if native is not None:
                new = _str_entries(value)
                old = None if was is ABSENT else _str_entries(was)
                if (
                    new is not None
                    and len(new) == 1
                    and (was is ABSENT or (old is not None and len(old) == 1))
                    and native(self._map, key, old and old[0], new[0], None, None) is not None
                ):
                    return
            self._move_string(key, was, value)
            return
        if was is not ABSENT:
            self.remove_entries(key, self.entries((was,)))
        self.add_entries(key, self.entries((value,)))

    def _move_string(self, key: Key, was: Any, value: str) -> None:
        """Refile ``key`` from non-empty string ``was`` (or ``ABSENT``) to another one."""
        if was is not ABSENT:
            self.remove_entries(key, _str_entries(was))
        self.add_entries(key, _str_entries(value))

    def remove_entries(self, key: Key, entries: Sequence[tuple[str, ...]] | None) -> None:
        """Undo :meth:`add_entries` for the same ``key`` and ``entries``."""
        if entries is None:
            self._loose.discard(key)
            return
        index = self._map
        for entry in entries:
            bucket = self._write_bucket(entry)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del index[entry]

    def _bucket(self, entry: tuple[str, ...]) -> KeySet | None:
        """The key set filed under ``entry`` (unpacked now if it was saved), or None."""
        bucket = self._map.get(entry)
        if type(bucket) is PackedKeys or type(bucket) is PendingKeys:
            bucket = self._map[entry] = bucket.unpack()
            if not bucket:
                del self._map[entry]
                return None
        return bucket  # type: ignore[return-value]

    def _write_bucket(self, entry: tuple[str, ...]) -> KeySet | PendingKeys | None:
        """The bucket under ``entry`` to change, or None: a saved one is not unpacked (the
        changes are kept beside it until a read)."""
        bucket = self._map.get(entry)
        if type(bucket) is PackedKeys:
            bucket = self._map[entry] = PendingKeys(bucket)
        return bucket  # type: ignore[return-value]

    def compact(self) -> None:
        """Re-create every key set at its tightest size (after a bulk build); O(entries)."""
        index = self._map
        for entry, bucket in index.items():
            if type(bucket) is dict:
                index[entry] = dict.fromkeys(bucket)  # sized for its length

    def clear(self) -> None:
        """Forget every entry."""
        self._map.clear()
        self._loose.clear()

    def saved(self) -> tuple[list[tuple[str, ...]], list[KeySet | PackedKeys], set[Key]]:
        """:meth:`export` with the buckets not used yet left packed; O(entries)."""
        for entry in [e for e, b in self._map.items() if type(b) is PendingKeys]:
            self._bucket(entry)
        return list(self._map), list(self._map.values()), self._loose  # type: ignore[arg-type]

    def export(self) -> tuple[list[tuple[str, ...]], list[KeySet], set[Key]]:
        """The index's content: filed text tuples, their key sets, the verify-always keys.

        The sets are the index's own (read them, do not change them); O(entries).
        """
        for entry in list(self._map):
            self._bucket(entry)
        return list(self._map), list(self._map.values()), self._loose  # type: ignore[arg-type]

    def restore(
        self,
        entries: Iterable[tuple[str, ...]],
        buckets: Iterable[KeySet | PackedKeys],
        loose: set[Key],
    ) -> None:
        """Replace the content with what :meth:`export` returned; takes the sets as they are."""
        self._map = dict(zip(entries, buckets, strict=True))
        self._loose = loose

    @staticmethod
    def probes(values: Sequence[Sequence[Any]]) -> list[tuple[str, ...]] | None:
        """Text tuples to look up for per-field literal alternatives, or None if unusable.

        Args:
            values: for each indexed field (in index order), the literals it may equal.
        """
        if len(values) == 1 and len(values[0]) == 1:  # one field, one literal: the usual
            got = literal_texts(values[0][0])
            return None if got is None else [(text,) for text in dict.fromkeys(got)]
        per_field: list[list[str]] = []
        for alternatives in values:
            texts: list[str] = []
            for value in alternatives:
                got = literal_texts(value)
                if got is None:
                    return None
                texts.extend(got)
            per_field.append(list(dict.fromkeys(texts)))
        return list(itertools.product(*per_field))

    def lookup(self, values: Sequence[Sequence[Any]]) -> set[Key]:
        """Keys that may hold, field by field, one of ``values``; O(combinations).

        Raises:
            ValueError: a literal has no exact text form (the planner checks first
                with :meth:`probes`).
        """
        probes = self.probes(values)
        if probes is None:
            raise ValueError("literal cannot be looked up in a hash index")
        return self.lookup_probes(probes)

    def probe_keys(self, probe: tuple[str, ...]) -> Collection[Key]:
        """:meth:`lookup_probes` of one probe as a list (no set is built when no record
        is verify-always: a bucket's keys are distinct); O(keys). A saved bucket no write
        has changed is returned packed, as it is (an iterable of its distinct keys, which
        the topic's reader reads off its positions): building its key set hashes every
        key, and even listing it costs an int per position and a visit per key, most of
        a query's time after a reopen."""
        if self._loose:
            return self.lookup_probes((probe,))
        saved = self._map.get(probe)
        if type(saved) is PackedKeys:  # saved, unchanged since: handed over as it is
            return saved
        bucket = self._bucket(probe)
        return list(bucket) if bucket else []

    def lookup_probes(self, probes: Iterable[tuple[str, ...]]) -> set[Key]:
        """Union of the buckets for ``probes`` plus the verify-always set."""
        out = set(self._loose)
        for probe in probes:
            bucket = self._bucket(probe)
            if bucket:
                out.update(bucket)
        return out

    def estimate(self, probes: Iterable[tuple[str, ...]]) -> int:
        """How many candidates :meth:`lookup_probes` would return (upper bound); O(probes)."""
        if type(probes) is list and len(probes) == 1:
            return len(self._loose) + len(self._map.get(probes[0], ()))
        return len(self._loose) + sum(len(self._map.get(p, ())) for p in probes)

    def check(self) -> None:
        """Assert internal invariants (no empty buckets)."""
        assert all(self._map.values()), "empty bucket left in hash index"
