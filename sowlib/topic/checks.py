"""``Topic.check`` (every invariant of a topic, its log, cache and indexes) and
``Topic.stats``.

Imports ``index``, ``storage`` and sibling modules; never the facade.
"""

from __future__ import annotations

from typing import Any

from sowlib.config import TopicConfig
from sowlib.index import IndexSet
from sowlib.index.persist import index_snapshot
from sowlib.storage import RecordKind
from sowlib.topic.parts import Parts

__all__ = ["check_topic", "topic_stats"]


def topic_stats(parts: Parts, config: TopicConfig) -> dict[str, Any]:
    """Counters and sizes (spec §16): records, bytes, garbage ratio, indexes, cache."""
    log, keys, cache = parts.log, parts.keys, parts.cache
    used, live = log.end_offset, keys.live_bytes
    subs = parts.subs
    return {
        "topic": config.name,
        "message_type": config.message_type,
        "path": log.path,
        "records": len(keys),
        "valid_keys": len(keys),
        "file_bytes": log.file_size,
        "used_bytes": used,
        "live_bytes": live,
        "garbage_ratio": (1.0 - live / used) if used else 0.0,
        "indexes": parts.indexes.names(),
        "expirations_pending": len(parts.expiry),
        "history_window": config.history_window,
        "history_granularity": config.history_granularity,
        "last_seq": log.last_seq,
        "subscriptions": subs.count if hasattr(subs, "count") else None,
        "from_checkpoint": parts.reads.from_checkpoint,
        "cache_bytes": cache.budget,
        "cache_used_bytes": cache.used,
        "cache_records": len(cache),
        **parts.writer.counts,
    }


def check_topic(parts: Parts) -> None:
    """Assert the log's invariants, that each key points at its live PUT, the live byte
    count, the cache's budget, and that the indexes equal indexes rebuilt from scratch.

    Raises:
        CorruptRecordError: a record fails its checks.
        AssertionError: an in-memory structure disagrees with the log.
    """
    writer, source = parts.writer, parts.source
    writer.indexes.settle()
    log, keys = writer.log, writer.keys
    log.log.check()
    for key, offset in keys.offsets():
        rec = log.log.read(offset)
        text = keys.text_of(key)
        assert rec.key == text, f"entry {text!r} points at {rec!r}"
        assert rec.kind == RecordKind.PUT, f"entry {text!r} points at a tombstone"
        head = keys.header(key)
        assert head is not None, f"entry {text!r} has no header"
        assert head.seq == rec.seq, f"entry {text!r} seq {head.seq} != {rec.seq}"
    if writer.history is None:
        live = sum(log.header(offset).size for _key, offset in keys.offsets())
        assert live == keys.live_bytes, f"live bytes {keys.live_bytes} != {live}"
    writer.views.cache.check()
    indexes = writer.indexes
    fresh = IndexSet(indexes.key_fields, [ix.fields for ix in indexes.hashes], list(indexes.memos))
    docs = dict(source.docs(keys.keys()))
    for key, doc in docs.items():
        fresh.on_put(key, None, doc)
    assert index_snapshot(fresh) == index_snapshot(indexes), "indexes differ from a rebuild"
    columns = getattr(indexes.listener, "check", None)  # in-memory columns (sowlib.columns)
    if columns is not None:
        columns(docs)
