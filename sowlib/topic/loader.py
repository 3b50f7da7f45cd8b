"""Opening a topic: the key map and the declared indexes from the checkpoint, or rebuilt.

A clean close saves both in one checkpoint blob (the indexes with their own
checksum); a reopen loads them without decoding a record. Without a usable blob
(a crash, a damaged or stale index section) the key map is rebuilt from the log's
entries and the indexes by streaming the live records once, keeping no document.
A close that finds the topic as the checkpoint it opened from left it saves that
blob again instead of packing the same state anew.
Imports ``index``, ``storage`` and sibling modules; never the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgpack

from sowlib.gcpause import paused_gc, release_free_memory
from sowlib.index import IndexSet
from sowlib.index.indexset import is_regular_key_value
from sowlib.index.persist import dump_indexes, load_indexes
from sowlib.index.saved_values import CodedColumn, dump_values, load_values
from sowlib.index.types import Key
from sowlib.index.upkeep import interned
from sowlib.index.values import EXACT_LIMIT, KeyGroups
from sowlib.topic.slots import position_finder
from sowlib.topic.writer import Writer

__all__ = ["Progress", "checkpoint_blob", "fill_values", "load", "rebuild_indexes"]

#: ``progress(done, total)``: called while a long operation runs.
Progress = Callable[[int, int], object]

# Below this many keys an open frees too little to be worth a pass over the C heap.
_TRIM_MIN_KEYS = 100_000
_TAG = "sowlib-topic/1"
# Records read and decoded per step of an index rebuild: the documents of a small batch
# are freed while they are still in the CPU caches.
_BATCH = 512


def checkpoint_blob(writer: Writer) -> bytes:
    """What a clean close saves: the key map and the indexes; O(keys + index entries),
    O(1) when nothing changed since the checkpoint the topic was opened from."""
    log = writer.log.log
    if writer.saved_state is not None and writer.saved_state == _state(writer):
        checkpoint = log.load_checkpoint()
        if checkpoint is not None and checkpoint[1] == log.end_offset:
            blob: bytes = checkpoint[0]
            return blob
    keymap, keys = writer.keys.to_blob()
    indexes = dump_indexes(writer.indexes, keys, position_finder)
    blob = msgpack.packb([_TAG, keymap, indexes, dump_values(writer.indexes, keys)])
    return blob


def _state(writer: Writer) -> tuple[Any, ...]:
    """What changes with every publish, delete, expiration, compaction or index added."""
    log = writer.log.log
    return (
        log.generation,
        log.end_offset,
        log.record_count,
        len(writer.keys),
        writer.keys.live_bytes,
        tuple(writer.indexes.names()),
    )


def load(writer: Writer, progress: Progress | None = None) -> None:
    """Fill the key map, indexes and expiry queue of a topic from its log."""
    with paused_gc():  # many small containers, no cycles
        if writer.history is not None:
            for rec in writer.log.log.scan():
                writer.apply(rec)
        else:
            _load_entries(writer, progress)
    if writer.expiry.enabled:
        writer.expiry.load(writer.keys.expiring())
    if len(writer.keys) >= _TRIM_MIN_KEYS:
        release_free_memory()  # the blob, the walk and the decoded documents are gone


def _load_entries(writer: Writer, progress: Progress | None) -> None:
    log = writer.log.log
    checkpoint = log.load_checkpoint()
    if checkpoint is not None:
        blob, end = checkpoint
        parts = _split(blob)
        if parts is not None and writer.keys.load_blob(parts[0]):
            keys = writer.keys.keys()
            if load_indexes(writer.indexes, parts[1], keys):
                # The values the indexes read, kept per key: from the checkpoint, or
                # (an older one) read out of the live records once.
                if getattr(log, "readonly", False):
                    # A reader holds them only once it applies a change (refresh).
                    saved = parts[2]
                    writer.indexes.defer_values(lambda: _restore_values(writer, saved))
                else:
                    _restore_values(writer, parts[2], keys)
                # The indexes match the key map at the checkpoint: replay the tail
                # through the write path's own upkeep.
                replayed = False
                for rec in log.scan(end):
                    writer.apply(rec)
                    replayed = True
                if not replayed:
                    writer.saved_state = _state(writer)
                return
            writer.keys.clear()
    # From the first record: a walk from there checks the records a checkpoint vouched
    # for, so the rebuild below may read every live record without its checksum.
    writer.keys.replay_columns(log.scan_columns())
    rebuild_indexes(writer, progress)


def _split(blob: bytes) -> tuple[bytes, bytes, bytes | None] | None:
    try:
        tag, keymap, indexes, *rest = msgpack.unpackb(blob)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if tag != _TAG or not isinstance(keymap, bytes) or not isinstance(indexes, bytes):
        return None
    values = rest[0] if rest and isinstance(rest[0], bytes) else None
    return keymap, indexes, values


def _restore_values(writer: Writer, saved: bytes | None, keys: Sequence[Key] | None = None) -> None:
    """The kept values from the checkpoint's part, else read out of the live records."""
    keys = writer.keys.keys() if keys is None else keys
    if not load_values(writer.indexes, saved, keys, _filler(writer)):
        fill_values(writer)


def _filler(writer: Writer) -> Callable[[Any, Sequence[Key], Sequence[Any]], bool]:
    """What fills a kept table: it holds the key map's keys, so it is filled from a copy
    of the key map's index in one C call where it is built (a column as the checkpoint
    holds it, its distinct values and their codes, read as it is)."""
    fill_table = writer.keys.fill_table

    def fill(table: Any, keys: Sequence[Key], column: Sequence[Any]) -> bool:
        if isinstance(column, CodedColumn):
            return fill_table(table, keys, (column.distinct, column.codes))
        return fill_table(table, keys, column)

    return fill


def fill_values(writer: Writer) -> None:
    """Fill the index set's kept values from the live records (a checkpoint without
    them): each record read once, its checksum checked (this open has not walked the
    records the checkpoint vouched for); the indexes stay as they are."""
    indexes = writer.indexes
    indexes.forget_values()
    if indexes.kept_tables():
        keys = writer.keys.keys()
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start : start + _BATCH]
            docs = [doc for _key, doc in writer.views.docs(chunk)]
            indexes.keep_columns(chunk, indexes.columns(docs))
    indexes.values_filled()


def rebuild_indexes(writer: Writer, progress: Progress | None = None) -> None:
    """Refill every index from the live records, streaming; no document is kept.

    Every live record was verified by this open (the recovery walk, or a walk from the
    first record), so the payloads are read in file order without their checksums. The
    indexed fields are taken a column at a time: read out of the payloads by the codec's
    ``top_columns`` where it has one (JSON, for top-level fields), else from the decoded
    documents (:meth:`~sowlib.index.IndexSet.columns`); keys are grouped by value over
    the whole rebuild, so each index files each distinct value once.

    Args:
        writer: the topic's writer (its key map is complete).
        progress: called with ``(done, total)`` records after each batch.
    """
    indexes = writer.indexes
    indexes.clear()
    keys, offsets = writer.keys.live_in_file_order()
    total = len(keys)
    if not indexes.has_field_indexes and not indexes.key_fields:
        indexes.restore_counts(total, set())  # nothing to read: only the record count
        if progress is not None:
            progress(total, total)
        return
    build = _Build(indexes)
    done = 0
    decode_many, columns = writer.views.decode_many, indexes.columns
    names = indexes.top_names
    top = getattr(writer.views.codec, "top_columns", None)
    if None in names or not writer.views.filterable:
        top = None
    # The values of each indexed path over every live key: grouped and kept once, at
    # the end (the documents of a batch are freed with it).
    whole: list[list[Any]] = [[] for _ in indexes.paths]
    for payloads in writer.log.trusted_payloads(keys, offsets, _BATCH):
        # The indexed fields read out of the bytes where the codec can (equal to the
        # decoded documents' fields), else from the documents.
        got = None if top is None else top(payloads, names)
        batch = columns(decode_many(payloads)) if got is None else got
        for column, values in zip(whole, batch, strict=True):
            column.extend(values)
        done += len(payloads)
        if progress is not None:
            progress(done, total)
    build.add(keys, 0, whole)
    at = {path: i for i, path in enumerate(indexes.paths)}
    for path, _table in indexes.kept_tables():
        column = interned(whole[at[path]])
        whole[at[path]] = column
        indexes.keep_path_values(path, keys, column, _filler(writer))
    del whole
    build.finish(keys)


class _Build:
    """An index rebuild from columns of field values (see :meth:`IndexSet.columns`):
    positions in the key list grouped by value while the batches stream, filed into the
    indexes at the end as packed key sets (unpacked by their first use, as after a load)."""

    def __init__(self, indexes: IndexSet) -> None:
        at = {path: i for i, path in enumerate(indexes.paths)}
        self.indexes = indexes
        self.key_at = [at[path] for path in indexes.key_fields]
        self.hashes = [(ix, [at[f] for f in ix.fields], KeyGroups(True)) for ix in indexes.hashes]
        self.memos = [(memo, at[path], KeyGroups(True)) for path, memo in indexes.memos.items()]
        self.irregular: set[Key] = set()
        # Some key was filed one at a time: its sets may be larger than needed.
        self.loose = False

    def add(self, keys: Sequence[Key], start: int, columns: Sequence[Sequence[Any]]) -> None:
        """Take one batch: the values of each indexed path for ``keys[start:]``."""
        count = len(columns[0]) if columns else 0
        chunk = keys[start : start + count]
        key_columns = [columns[i] for i in self.key_at]
        if key_columns and not (len(key_columns) == 1 and _small_ints(key_columns[0])):
            regular, irregular = is_regular_key_value, self.irregular
            for key, values in zip(chunk, zip(*key_columns, strict=True), strict=True):
                if not all(map(regular, values)):
                    irregular.add(key)
        positions = range(start, start + count)
        for index, at, groups in self.hashes:
            if len(at) == 1:
                groups.add(positions, columns[at[0]])
            else:
                self.loose = True
                add, entries = index.add_entries, index.entries
                rows = zip(*(columns[i] for i in at), strict=True)
                for key, row in zip(chunk, rows, strict=True):
                    add(key, entries(row))
        for _memo, i, groups in self.memos:
            groups.add(positions, columns[i])

    def finish(self, keys: Sequence[Key]) -> None:
        """File the grouped keys into their indexes; set the record count."""
        for index, _at, groups in self.hashes:
            self.loose = self.loose or bool(groups.others)
            index.add_groups(groups, keys)
        for memo, _i, groups in self.memos:
            self.loose = self.loose or bool(groups.others)
            memo.add_groups(groups, keys)
        self.indexes.restore_counts(len(keys), self.irregular)
        if self.loose:
            self.indexes.compact()


def _small_ints(values: Sequence[Any]) -> bool:
    """True when every value is an int every literal with its text finds (C-level passes)."""
    return not values or (
        set(map(type, values)) == {int} and min(values) > -EXACT_LIMIT and max(values) < EXACT_LIMIT
    )
