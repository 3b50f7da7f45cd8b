"""Opening a topic: the key map and the declared indexes from the checkpoint, or rebuilt.

A clean close saves both in one checkpoint blob (the indexes with their own
checksum); a reopen loads them without decoding a record. Without a usable blob
(a crash, a damaged or stale index section) the key map is rebuilt from the log's
entries and the indexes by streaming the live records once, keeping no document.
Imports ``index``, ``storage`` and sibling modules; never the facade.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from sowlib.gcpause import paused_gc
from sowlib.index.persist import dump_indexes, load_indexes
from sowlib.index.types import Key
from sowlib.topic.writer import Writer

__all__ = ["Progress", "checkpoint_blob", "load", "rebuild_indexes"]

#: ``progress(done, total)``: called while a long operation runs.
Progress = Callable[[int, int], object]

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
    writer.expiry.load(writer.keys.expiring())


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
    """Refill every index from the live records, in batches; no document is kept."""
    indexes = writer.indexes
    indexes.clear()
    views = writer.views
    pairs = writer.keys.offsets()
    pairs.sort(key=lambda p: p[1])  # file order: the map is read front to back
    total = len(pairs)
    top = writer.content.top_field if writer.content is not None else None
    top_values = getattr(views.codec, "top_values", None)
    needs_docs = indexes.has_field_indexes or top is None or top_values is None
    getters = [path.getter for path in writer.indexes.key_fields]
    for lo in range(0, total, _CHUNK):
        chunk = pairs[lo : lo + _CHUNK]
        keys: list[Key] = [k for k, _o in chunk]
        if not indexes.has_field_indexes and not getters:
            for key in keys:  # nothing to read: only the record count
                indexes.on_put_keys(key, (), True)
            continue
        payloads = list(views.log.payloads([o for _k, o in chunk]))
        values: list[Any] | None = None
        if not needs_docs:
            values = top_values(payloads, top)  # type: ignore[misc]
        if values is not None:
            for key, value in zip(keys, values, strict=True):
                indexes.on_put_keys(key, (value,), True)
        else:
            docs = views.decode_many(payloads)
            if indexes.has_field_indexes:
                for key, doc in zip(keys, docs, strict=True):
                    indexes.on_put(key, None, doc)
            else:
                for key, doc in zip(keys, docs, strict=True):
                    indexes.on_put_keys(key, [g(doc) for g in getters], True)
        if progress is not None:
            progress(min(lo + _CHUNK, total), total)
