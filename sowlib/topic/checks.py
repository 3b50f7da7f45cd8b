"""``Topic.check``: every invariant of a topic, its log, cache and indexes.

Imports ``index``, ``storage`` and sibling modules; never the facade.
"""

from __future__ import annotations

from sowlib.index import IndexSet
from sowlib.index.persist import index_snapshot
from sowlib.storage import RecordKind
from sowlib.topic.source import TopicSource
from sowlib.topic.writer import Writer

__all__ = ["check_topic"]


def check_topic(writer: Writer, source: TopicSource) -> None:
    """Assert the log's invariants, that each key points at its live PUT, the live byte
    count, the cache's budget, and that the indexes equal indexes rebuilt from scratch.

    Raises:
        CorruptRecordError: a record fails its checks.
        AssertionError: an in-memory structure disagrees with the log.
    """
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
