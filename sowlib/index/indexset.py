"""The indexes one topic maintains: configured hash indexes, memo indexes, key-field bookkeeping.

The topic calls :meth:`IndexSet.on_put` / :meth:`IndexSet.on_delete` on every
write; the planner reads it. Imports only ``paths`` and ``index.*``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import attrs

from sowlib.gcpause import paused_gc, release_free_memory
from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex
from sowlib.index.pending import PendingUpkeep
from sowlib.index.protocols import DocSource, Index, WriteListener
from sowlib.index.regular import all_small_ints, document_columns, is_regular_key_value, same_value
from sowlib.index.types import Key
from sowlib.index.upkeep import ABSENT, Changes, KeptValues, Table, changes, interned
from sowlib.index.values import EXACT_LIMIT, as_path, as_paths
from sowlib.paths import FieldPath

# (key, value) pairs filed per step of an on-demand memo build.
_BUILD_CHUNK = 4096
# defer_columns settles once this many rows wait (or an eighth of the records).
_SETTLE_ROWS = 1 << 16
# Below this many keys a build frees too little to be worth a pass over the C heap.
_TRIM_MIN_KEYS = 100_000

__all__ = ["DocSource", "Index", "IndexSet", "WriteListener", "is_regular_key_value"]


@attrs.define(eq=False, init=False)
class IndexSet:
    """Every index of one topic.

    Besides the indexes, the set keeps per live key the values of every path a hash or
    memo index reads (:class:`~sowlib.index.upkeep.KeptValues`), so an update or a
    delete takes the old version out without its document.

    Args:
        key_fields: the topic's key fields (``()`` for publisher-supplied keys).
        hash_indexes: field lists, one per configured hash index.
        memo: fields with a memo index created in advance.
        table: makes the empty ``key -> value`` tables the kept values live in.

    Example:
        >>> ix = IndexSet(["/id"], [["/region"]], ["/price"])
        >>> ix.names()
        ['hash(/region)', 'memo(/price)']
    """

    key_fields: tuple[FieldPath, ...]
    hashes: list[HashIndex]
    memos: dict[FieldPath, MemoIndex]
    #: Keys whose key-field values are not regular (see :func:`is_regular_key_value`).
    irregular: set[Key]
    #: Records seen through on_put/on_delete (inserts minus deletes).
    _live: int
    # Fields a query has scanned the file for (see first_scan).
    _scanned: set[FieldPath]
    # Every distinct path the indexes and key fields read (key fields first),
    # resolved once per document; each index reads its values by position.
    _paths: tuple[FieldPath, ...]
    _getters: tuple[Callable[[Any], Any], ...]
    # Per path: a C-level reader of a top-level field of plain dicts, or None.
    _items: tuple[Callable[[Any], Any] | None, ...]
    _top_names: tuple[str | None, ...]  # see top_names
    _key_at: range
    _hash_at: list[tuple[HashIndex, tuple[int, ...]]]
    _memo_at: list[tuple[MemoIndex, int]]
    # Per live key, the values of the paths an index reads: (position in _paths, table).
    _kept: KeptValues
    _kept_at: list[tuple[int, Table]]
    # For put_values of an update: (index, position, kept table) per index, hash indexes
    # first; None when a hash index reads several fields.
    _moves: list[tuple[HashIndex | MemoIndex, int, Table]] | None
    # What fills the kept values when first needed (see defer_values), or None.
    _deferred: Callable[[], None] | None
    #: Follows every write (see :meth:`attach`), or None.
    listener: WriteListener | None
    _listen_at: tuple[int, ...]
    #: More listeners (see :meth:`follow`), each with the positions of its paths.
    _followers: list[tuple[WriteListener, tuple[int, ...]]]
    # Writes whose upkeep waits for the next read (see defer_columns).
    _pending: PendingUpkeep

    def __init__(
        self,
        key_fields: Sequence[str | FieldPath] = (),
        hash_indexes: Sequence[Sequence[str | FieldPath]] = (),
        memo: Sequence[str | FieldPath] = (),
        table: Callable[[], Table] = dict,
    ) -> None:
        self._kept = KeptValues(table)
        self._deferred: Callable[[], None] | None = None
        self.listener = None
        self._followers = []
        self._pending = PendingUpkeep()
        self.key_fields = as_paths(key_fields)
        self.hashes = [HashIndex(fields) for fields in hash_indexes]
        self.memos = {}
        self.irregular = set()
        self._live = 0
        self._scanned = set()
        # Pre-created memo indexes are maintained from the topic's first write
        # on; on-demand ones are built by ensure_memo.
        for path in memo:
            parsed = as_path(path)
            self.memos[parsed] = MemoIndex(parsed)
        self._layout()

    def _layout(self) -> None:
        """Recompute which resolved value each index reads (after an index is added)."""
        paths: dict[FieldPath, int] = {}
        for path in self.key_fields:
            paths.setdefault(path, len(paths))
        for index in self.hashes:
            for path in index.fields:
                paths.setdefault(path, len(paths))
        for path in self.memos:
            paths.setdefault(path, len(paths))
        listened = () if self.listener is None else self.listener.paths
        for path in listened:
            paths.setdefault(path, len(paths))
        self._listen_at = tuple(paths[path] for path in listened)
        for follower, _at in self._followers:
            for path in follower.paths:
                paths.setdefault(path, len(paths))
        self._followers = [(f, tuple(paths[p] for p in f.paths)) for f, _at in self._followers]
        self._paths = tuple(paths)
        self._getters = tuple(path.getter for path in paths)
        self._items = tuple(
            itemgetter(path.steps[0].name)
            if len(path.steps) == 1
            and path.steps[0].index is None
            and not path.steps[0].name.startswith("@")
            else None
            for path in paths
        )
        self._top_names = tuple(
            p.steps[0].name if i is not None else None
            for p, i in zip(paths, self._items, strict=True)
        )
        self._key_at = range(len(self.key_fields))
        self._hash_at = [(ix, tuple(paths[f] for f in ix.fields)) for ix in self.hashes]
        self._memo_at = [(ix, paths[path]) for path, ix in self.memos.items()]
        indexed = {i for _ix, at in self._hash_at for i in at} | {i for _ix, i in self._memo_at}
        self._kept_at = [(i, self._kept.table(self._paths[i])) for i in sorted(indexed)]
        tables = dict(self._kept_at)
        moves: list[tuple[HashIndex | MemoIndex, int, Table]] = [
            (ix, at[0], tables[at[0]]) for ix, at in self._hash_at if len(at) == 1
        ]
        moves += [(ix, i, tables[i]) for ix, i in self._memo_at]
        self._moves = moves if len(moves) == len(self._hash_at) + len(self._memo_at) else None

    def values(self, doc: Any) -> list[Any]:
        """The value of each of :attr:`paths` in ``doc`` (what :meth:`put_values` takes)."""
        return [getter(doc) for getter in self._getters]

    @property
    def values_known(self) -> bool:
        """True when the kept values of every live key are known (see
        :meth:`forget_values`; always when no path is kept): upkeep then needs no old
        document."""
        return self._kept.complete or not self._kept_at

    def defer_values(self, fill: Callable[[], None]) -> None:
        """Leave the kept values unknown until :meth:`ensure_values`, which calls ``fill``
        (it must make them known, e.g. by :meth:`keep_columns` and :meth:`values_filled`):
        a read-only opener that never applies a change does not hold them."""
        self.forget_values()
        self._deferred = fill

    def ensure_values(self) -> None:
        """Run a fill :meth:`defer_values` left (before the first change); O(1) after."""
        fill = self._deferred
        if fill is not None:
            self._deferred = None
            fill()

    def forget_values(self) -> None:
        """Drop the kept values (after a load that restored the indexes without them):
        until :meth:`values_filled`, an update must pass its old document."""
        self._kept.clear()
        self._kept.complete = False

    def keep_columns(self, keys: Sequence[Key], columns: Sequence[Sequence[Any]]) -> None:
        """Set the kept values of ``keys`` from the values of :attr:`paths` (as
        :meth:`columns` gives them); the indexes are not touched."""
        for at, table in self._kept_at:
            table.update(zip(keys, interned(list(columns[at])), strict=True))

    def kept_tables(self) -> list[tuple[FieldPath, Table]]:
        """The kept values: ``(path, key -> value)`` for each path an index reads (the set's
        own tables: read them, do not change them)."""
        return [(self._paths[at], table) for at, table in self._kept_at]

    def keep_path_values(
        self,
        path: FieldPath,
        keys: Sequence[Key],
        column: Sequence[Any],
        fill: Callable[[Table, Sequence[Key], Sequence[Any]], bool] | None = None,
    ) -> None:
        """Set the kept values of ``path`` (one an index reads) for ``keys``.

        ``fill(table, keys, column)``, when given, may set them into the path's table
        while it is empty at once, as ``table.update(zip(keys, column))`` would (True;
        False: the pairs are set one by one)."""
        table = self._kept.table(path)
        if fill is not None and not len(table) and fill(table, keys, column):
            return
        self._kept.fill(path, zip(keys, column, strict=True))

    def values_filled(self) -> None:
        """Declare the kept values known for every live key (after :meth:`keep_columns`
        of each)."""
        self._kept.complete = True

    def kept_values(self, key: Key) -> list[Any]:
        """The kept value of each of :attr:`paths` for ``key`` (``ABSENT`` where none is
        kept: a path no index reads, or a key without a record)."""
        out = [ABSENT] * len(self._paths)
        for at, table in self._kept_at:
            out[at] = table.get(key, ABSENT)
        return out

    def on_put(self, key: Key, old_doc: Any | None, new_doc: Any) -> None:
        """Maintain every index for an insert (``old_doc`` None) or an update; the
        reference the other forms of upkeep are checked against.

        Each indexed path is resolved once per document. O(1) per hash index
        and O(log n) per memo index; an index whose values did not change is
        skipped, as is the key-field check when the key values did not change.
        """
        getters = self._getters
        new = [getter(new_doc) for getter in getters]
        if old_doc is None:
            self._live += 1
            self._put(key, None, new)
        else:
            self._put(key, [getter(old_doc) for getter in getters], new)

    def put_values(self, key: Key, new: list[Any], inserted: bool) -> None:
        """:meth:`on_put` from the new document's values of :attr:`paths`, the old ones
        taken from the kept values (:attr:`values_known` must be True); nothing read.

        An update of single-field indexes refiles each index from its kept value without
        gathering them first (equal to :meth:`on_put` with the old document:
        ``tests/index/test_batch_upkeep.py``).
        """
        moves = self._moves
        if inserted or moves is None:
            if inserted:
                self._live += 1
            self._put(key, None if inserted else self.kept_values(key), new)
            return
        self._check_key(key, new)
        for index, i, table in moves:
            value = new[i]
            was = table.get(key, ABSENT)
            if type(was) is not type(value) or was != value:
                index.move(key, was, value)
        self._keep(key, new)

    def _check_key(self, key: Key, new: list[Any]) -> None:
        """Keep :attr:`irregular` up to date for ``key`` with these values of :attr:`paths`."""
        at = self._key_at
        if not at:
            return
        first = new[0]
        if len(at) == 1 and type(first) is int and -EXACT_LIMIT < first < EXACT_LIMIT:
            self.irregular.discard(key)  # what is_regular_key_value says of a small int
        elif all(is_regular_key_value(new[j]) for j in at):
            self.irregular.discard(key)
        else:
            self.irregular.add(key)

    def _put(self, key: Key, old: list[Any] | None, new: list[Any]) -> None:
        for i in self._key_at:
            if old is None or type(old[i]) is not type(new[i]) or old[i] != new[i]:
                self._check_key(key, new)  # a key value changed (or a new record)
                break
        for index, at in self._hash_at:
            if len(at) == 1:
                (i,) = at
                value = new[i]
                was = ABSENT if old is None else old[i]
                if type(was) is not type(value) or was != value:
                    index.move(key, was, value)
            else:
                if old is not None:
                    if all(same_value(old[i], new[i]) for i in at):
                        continue
                    if ABSENT not in [old[i] for i in at]:
                        index.remove_entries(key, index.entries(tuple(old[i] for i in at)))
                index.add_entries(key, index.entries(tuple(new[i] for i in at)))
        for memo, i in self._memo_at:
            value = new[i]
            was = ABSENT if old is None else old[i]
            if type(was) is not type(value) or was != value:
                memo.move(key, was, value)
        self._keep(key, new)

    def _keep(self, key: Key, new: list[Any]) -> None:
        """Keep ``key``'s new values and pass them to the listeners."""
        for pos, table in self._kept_at:
            value = new[pos]
            table[key] = sys.intern(value) if type(value) is str else value
        if self.listener is not None:
            self.listener.put(key, [new[i] for i in self._listen_at])
        for follower, at in self._followers:
            follower.put(key, [new[i] for i in at])

    def on_insert_many(self, keys: Sequence[Key], docs: Sequence[Any]) -> None:
        """:meth:`on_put` of new keys (none indexed yet, no repeats), a column at a time."""
        self.on_insert_columns(keys, self.columns(docs))

    @property
    def paths(self) -> tuple[FieldPath, ...]:
        """Every distinct path the indexes and key fields read, in :meth:`columns` order."""
        return self._paths

    @property
    def top_names(self) -> tuple[str | None, ...]:
        """For each of :attr:`paths`, its field name when it is a plain top-level field
        (``/name``: no index, no attribute), else None."""
        return self._top_names

    def columns(self, docs: Sequence[Any]) -> list[list[Any]]:
        """The value of each of :attr:`paths` in each document, a column per path.

        A top-level field of plain JSON-like dicts is read with one C-level map (the
        path's getter is the reference and is used for anything else).
        """
        return document_columns(self._getters, self._items, docs)

    def on_insert_columns(self, keys: Sequence[Key], columns: Sequence[Sequence[Any]]) -> None:
        """:meth:`on_insert_many` from the values of :attr:`paths` (see :meth:`columns`)."""
        self.put_columns(keys, columns, [True] * len(keys))

    def put_columns(
        self, keys: Sequence[Key], columns: Sequence[Sequence[Any]], inserted: Sequence[bool]
    ) -> None:
        """:meth:`put_values` of each of ``keys`` in turn (``columns`` as :meth:`columns`
        gives them), a column at a time, old values from the kept ones.

        A key repeated in the batch counts only with its last values (the versions
        before it are replaced within the batch). Per indexed path, the keys whose value
        changed are found with C-level passes; each index then takes them out of their
        old values and files them under the new ones, keys grouped by value (one bucket
        probe per distinct value). Equal to :meth:`put_values` of each key in turn
        (``tests/index/test_batch_upkeep.py``).
        """
        self._live += inserted.count(True)
        fresh = all(inserted)
        last = dict(zip(keys, range(len(keys)), strict=True))
        if len(last) != len(keys):
            rows = sorted(last.values())
            keys = list(map(keys.__getitem__, rows))
            columns = [list(map(column.__getitem__, rows)) for column in columns]
        count = len(keys)
        self._check_key_values(keys, columns)
        olds: dict[int, list[Any]] = {}
        moved: dict[int, Changes] = {}

        def change(at: int) -> Changes:
            got = moved.get(at)
            if got is None:
                got = moved[at] = changes(keys, olds[at], columns[at])
            return got

        # The C tables swap the new values in while reading the old (one probe per key),
        # unless a multi-field hash index reads the kept values meanwhile (_put_rows).
        swap = not fresh and all(len(at) == 1 for _ix, at in self._hash_at)
        swap = swap and all(hasattr(table, "swap") for _pos, table in self._kept_at)
        for pos, table in self._kept_at:
            if swap:
                kept = interned(list(columns[pos]))
                olds[pos] = table.swap(list(keys), kept, ABSENT)  # type: ignore[attr-defined]
            else:
                olds[pos] = (
                    [ABSENT] * count if fresh else list(map(table.get, keys, [ABSENT] * count))
                )
        for index, at in self._hash_at:
            if len(at) == 1:
                if fresh or not index.move_strings(keys, olds[at[0]], columns[at[0]]):
                    got = change(at[0])
                    if got.old_keys:
                        index.remove_many(got.old_keys, got.old_values)
                    index.add_many(got.keys, got.new)
            else:
                self._put_rows(index, keys, columns, at)
        for memo, i in self._memo_at:
            if fresh or not memo.move_numbers(keys, olds[i], columns[i]):
                got = change(i)
                if got.old_keys:
                    memo.remove_many(got.old_keys, got.old_values)
                memo.add_many(got.keys, got.new)
        if not swap:
            self.keep_columns(keys, columns)
        if self.listener is not None:
            self.listener.put_many(keys, [columns[i] for i in self._listen_at])
        for follower, at in self._followers:
            follower.put_many(keys, [columns[i] for i in at])

    def defer_columns(
        self, keys: Sequence[Key], columns: Sequence[Sequence[Any]], inserted: Sequence[bool]
    ) -> None:
        """:meth:`put_columns`, done at the next :meth:`settle` (a read-only topic's
        refresh: the indexes are read only by queries, which settle first; a key
        written many times meanwhile is filed once). Done now when listeners follow
        the writes, or when a fraction of the records waits."""
        self._pending.add(keys, columns, inserted)
        if self._followers or self._pending.rows >= max(_SETTLE_ROWS, self._live // 8):
            self.settle()

    def settle(self) -> None:
        """Do the upkeep :meth:`defer_columns` left (before anything reads or changes
        the indexes other than by a deferred write); O(1) when none waits."""
        if self._pending:
            self.put_columns(*self._pending.take())

    def _put_rows(
        self, index: HashIndex, keys: Sequence[Key], columns: Sequence[Sequence[Any]], at: Any
    ) -> None:
        """Upkeep of a multi-field hash index, a key at a time (before the kept values)."""
        tables = [table for i, table in self._kept_at if i in at]
        add, remove, entries = index.add_entries, index.remove_entries, index.entries
        rows = zip(*(columns[i] for i in at), strict=True)
        for key, row in zip(keys, rows, strict=True):
            was = tuple(table.get(key, ABSENT) for table in tables)
            if all(map(same_value, was, row)):
                continue
            if ABSENT not in was:
                remove(key, entries(was))
            add(key, entries(row))

    def _check_key_values(self, keys: Sequence[Key], columns: Sequence[Sequence[Any]]) -> None:
        """Keep :attr:`irregular` up to date for ``keys`` with these key-field values."""
        if not self._key_at:
            return
        key_columns = [columns[i] for i in self._key_at]
        if len(key_columns) == 1 and all_small_ints(key_columns[0]):
            self.irregular.difference_update(keys)  # every one is regular
            return
        regular = is_regular_key_value
        add, discard = self.irregular.add, self.irregular.discard
        for key, values in zip(keys, zip(*key_columns, strict=True), strict=True):
            if all(map(regular, values)):
                discard(key)
            else:
                add(key)

    def on_delete(self, key: Key, old_doc: Any = None) -> None:
        """Remove ``key`` from every index; same costs as on_put. Its old values are the
        kept ones when :attr:`values_known`, else read from ``old_doc`` (what it held)."""
        self._live -= 1
        self.irregular.discard(key)
        if self.listener is not None:
            self.listener.delete(key)
        for follower, _where in self._followers:
            follower.delete(key)
        if not self._kept_at:
            return
        old = self.kept_values(key) if self._kept.complete else self.values(old_doc)
        for _at, table in self._kept_at:
            table.pop(key, None)
        for index, at in self._hash_at:
            index.remove_entries(key, index.entries(tuple(old[i] for i in at)))
        for memo, i in self._memo_at:
            memo.update(key, old[i], False)

    def maintained(self, live: int) -> bool:
        """True when every one of the source's ``live`` records went through :meth:`on_put`.

        A source that never feeds its IndexSet (a historical view) fails this,
        and the planner then does not trust :attr:`irregular`.
        """
        return self._live == live

    def _all(self) -> list[HashIndex | MemoIndex]:
        return [*self.hashes, *self.memos.values()]

    def memo(self, path: FieldPath) -> MemoIndex | None:
        """The memo index on ``path`` if one exists."""
        return self.memos.get(path)

    def scanned(self, path: FieldPath) -> bool:
        """Whether a query already scanned the records for ``path`` (:meth:`note_scan`).

        The planner answers a topic's first query on a field no index covers with a
        scan and builds a memo index on the second: a one-off query (a Spark task,
        a notebook cell) does not pay for an index it never uses again.
        """
        return path in self._scanned

    def note_scan(self, path: FieldPath) -> None:
        """Record that a query scanned the records for ``path``."""
        self._scanned.add(path)

    def ensure_memo(self, path: str | FieldPath, source: DocSource) -> MemoIndex:
        """The memo index on ``path``, built from ``source`` the first time; O(n log n) once.

        AMPS builds a memo index the first time a query needs a field and keeps
        it up to date afterwards; this does the same. The build streams the
        field's values: no document is kept.
        """
        parsed = as_path(path)
        index = self.memos.get(parsed)
        if index is None:
            index = MemoIndex(parsed)
            # The path's values are kept from now on (unless an index reads them already).
            kept = None if parsed in self._kept.tables else self._kept.table(parsed)
            with paused_gc():  # one set per value: nothing cyclic, many containers
                pairs = source.field_values(parsed)
                filed = 0
                while chunk := list(itertools.islice(pairs, _BUILD_CHUNK)):
                    keys, values = zip(*chunk, strict=True)
                    index.add_many(keys, values)
                    if kept is not None:
                        kept.update(zip(keys, interned(list(values)), strict=True))
                    filed += len(keys)
                index.compact()
            if filed >= _TRIM_MIN_KEYS:
                release_free_memory()  # the documents decoded for the build are gone
            self.memos[parsed] = index
            self._layout()
        return index

    def compact(self) -> None:
        """Re-create every index's key sets at their tightest size (after a bulk load)."""
        for index in self._all():
            index.compact()

    def attach(self, listener: WriteListener | None) -> None:
        """Call ``listener`` on every write from now on (None: stop); after its
        :attr:`~WriteListener.paths` change, attach it again. It gets the values of its
        paths, resolved once per document with the indexes' own."""
        self.listener = listener
        self._layout()

    def follow(self, listener: WriteListener, on: bool = True) -> None:
        """Call ``listener`` on every write from now on, besides :attr:`listener` (a view
        of the topic); ``on=False`` stops it. Its :attr:`~WriteListener.paths` are read
        when it is added."""
        self._followers = [(f, at) for f, at in self._followers if f is not listener]
        if on:
            self._followers.append((listener, ()))
        self._layout()

    @property
    def has_field_indexes(self) -> bool:
        """True when a hash or memo index (or the listener) needs each document's field
        values."""
        return bool(self.hashes or self.memos or self.listener or self._followers)

    def on_put_keys(self, key: Key, values: Sequence[Any], inserted: bool) -> None:
        """:meth:`on_put` for a set without field indexes, from the key-field values; O(1)."""
        if inserted:
            self._live += 1
        if all(is_regular_key_value(v) for v in values):
            self.irregular.discard(key)
        else:
            self.irregular.add(key)

    def clear(self) -> None:
        """Empty every index (the topic was cleared); memo indexes stay defined."""
        self._live = 0
        self.irregular.clear()
        self._kept.clear()
        self._deferred = None
        for index in self._all():
            index.clear()
        if self.listener is not None:
            self.listener.clear()
        for follower, _where in self._followers:
            follower.clear()

    @property
    def live(self) -> int:
        """Records seen through :meth:`on_put` / :meth:`on_delete` (inserts minus deletes)."""
        return self._live

    def restore_counts(self, live: int, irregular: set[Key]) -> None:
        """Set the record count and the irregular-key set (loading saved indexes)."""
        self._live = live
        self.irregular = irregular

    def names(self) -> list[str]:
        """Names of every index, hash indexes first: ``['hash(/a)', 'memo(/b)']``."""
        return [index.name for index in self._all()]
