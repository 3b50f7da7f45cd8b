"""Opening a topic: the key map and the declared indexes from the checkpoint, or rebuilt.

A clean close saves both in one checkpoint blob (the indexes with their own
checksum); a reopen loads them without decoding a record. Without a usable blob
(a crash, a damaged or stale index section) the key map is rebuilt from the log's
entries and the indexes by streaming the live records once, keeping no document.
Imports ``index``, ``storage`` and sibling modules; never the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgpack

from sowlib.gcpause import paused_gc, release_free_memory
from sowlib.index.persist import dump_indexes, load_indexes
from sowlib.index.types import Key
from sowlib.topic.writer import Writer

__all__ = ["Progress", "checkpoint_blob", "load", "rebuild_indexes"]

#: ``progress(done, total)``: called while a long operation runs.
Progress = Callable[[int, int], object]

# Below this many keys an open frees too little to be worth a pass over the C heap.
_TRIM_MIN_KEYS = 100_000
_TAG = "sowlib-topic/1"
# Records read and decoded per step of an index rebuild.
_CHUNK = 4096


def checkpoint_blob(writer: Writer) -> bytes:
    """What a clean close saves: the key map and the indexes; O(keys + index entries)."""
    keymap, keys = writer.keys.to_blob()
    blob: bytes = msgpack.packb([_TAG, keymap, dump_indexes(writer.indexes, keys)])
    return blob


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
    start: int | None = None
    index_blob: bytes | None = None
    if checkpoint is not None:
        blob, end = checkpoint
        parts = _split(blob)
        if parts is not None and writer.keys.load_blob(parts[0]):
            start, index_blob = end, parts[1]
    indexed = index_blob is not None and load_indexes(
        writer.indexes, index_blob, writer.keys.keys()
    )
    if start is not None and indexed:
        # The indexes match the key map at the checkpoint: replay the tail through
        # the write path's own upkeep.
        for rec in log.scan(start):
            writer.apply(rec)
        return
    writer.keys.replay(log.scan_entries(start))
    rebuild_indexes(writer, progress)


def _split(blob: bytes) -> tuple[bytes, bytes] | None:
    try:
        tag, keymap, indexes = msgpack.unpackb(blob)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if tag != _TAG or not isinstance(keymap, bytes) or not isinstance(indexes, bytes):
        return None
    return keymap, indexes


def rebuild_indexes(writer: Writer, progress: Progress | None = None) -> None:
    """Refill every index from the live records, in batches; no document is kept.

    The live records are read in file order by offset, each checksum verified (cheaper
    than a second walk of every record in the log); the indexed fields are taken a
    column at a time (:meth:`~sowlib.index.IndexSet.columns`).

    Args:
        writer: the topic's writer (its key map is complete).
        progress: called with ``(done, total)`` records after each batch.
    """
    indexes = writer.indexes
    indexes.clear()
    total = len(writer.keys)
    top = writer.content.top_field if writer.content is not None else None
    top_values = getattr(writer.views.codec, "top_values", None)
    getters = [path.getter for path in indexes.key_fields]
    needs_docs = indexes.has_field_indexes or top is None or top_values is None
    done = 0
    for keys, payloads in _checked_chunks(writer):
        if not indexes.has_field_indexes and not getters:
            for key in keys:  # nothing to read: only the record count
                indexes.on_put_keys(key, (), True)
        else:
            values = None if needs_docs else top_values(payloads, top)  # type: ignore[misc]
            if values is not None:
                for key, value in zip(keys, values, strict=True):
                    indexes.on_put_keys(key, (value,), True)
            else:
                docs = writer.views.decode_many(payloads)
                if indexes.has_field_indexes:
                    indexes.on_insert_many(keys, docs)
                else:
                    for key, doc in zip(keys, docs, strict=True):
                        indexes.on_put_keys(key, [g(doc) for g in getters], True)
        done += len(keys)
        if progress is not None:
            progress(done, total)
    indexes.compact()


def _checked_chunks(writer: Writer) -> Iterator[tuple[list[Key], list[bytes]]]:
    """The live records in file order, in batches, each record's checksum verified."""
    pairs = writer.keys.offsets()
    pairs.sort(key=lambda p: p[1])
    for lo in range(0, len(pairs), _CHUNK):
        chunk = pairs[lo : lo + _CHUNK]
        yield [k for k, _o in chunk], list(writer.log.payloads([o for _k, o in chunk]))
