"""A topic reopened from its clean-close checkpoint holds untouched keys as bare offsets.

Every operation on such a key (read, update, delete, delta, expiry, compaction, a reader
handle, the next checkpoint) must behave exactly as on a key published in this process,
and the topic's live-byte count must stay exact. The state machine avoids whole-topic
queries in its invariant: they would read (and so convert) every key at once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import msgpack
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from sowlib import SowStore, compile_filter
from sowlib.errors import CorruptRecordError
from sowlib.storage import AppendLog
from sowlib.storage.checkpoint import decode_checkpoint, encode_checkpoint

from .conftest import FakeClock
from .machines import IDS, VALUES, TopicAgainstDict


def _offset_of(path: str, key: str) -> int:
    """The log offset of the live record of ``key`` (the file read read-only)."""
    log = AppendLog(path, readonly=True)
    try:
        return [r.offset for r in log.scan() if r.key == key][-1]
    finally:
        log.close()


class ReopenedTopicVsDict(TopicAgainstDict):
    @rule(ids=st.lists(IDS, min_size=1, max_size=6, unique=True), v=VALUES)
    def publish_many(self, ids: list[int], v: Any) -> None:
        self.topic.publish_many([json.dumps({"id": i, "v": v}) for i in ids])
        for i in ids:
            self.model[i] = {"id": i, "v": v}

    @rule(i=IDS)
    def get(self, i: int) -> None:
        rec = self.topic.get(self.key(i))
        assert (rec.doc if rec is not None else None) == self.model.get(i)

    @rule()
    def reopen_clean(self) -> None:
        self.store.close()
        self._open_again()
        assert self.topic.stats()["from_checkpoint"]

    @rule()
    def reopen_after_crash(self) -> None:
        path = self.topic.stats()["path"]
        self.store.close()
        os.unlink(path + ".ckpt")
        self._open_again()

    @rule()
    def reader_agrees(self) -> None:
        if self.reader is None:
            self.reader = SowStore(self.dir, readonly=True)
        else:
            self.reader.refresh()
        topic = self.reader.topic("t")
        got = {i: r.doc for i in range(8) if (r := topic.get(self.key(i))) is not None}
        assert got == self.model
        topic.check()

    @rule()
    def query_all(self) -> None:
        assert {r.doc["id"]: r.doc for r in self.topic.sow()} == self.model

    @rule(v=st.integers(-2, 2))
    def query_by_value(self, v: int) -> None:
        flt = compile_filter(f"/v = {v}")  # the filter itself is the oracle
        expected = {i for i, doc in self.model.items() if flt.matches(doc)}
        assert {r.doc["id"] for r in self.topic.sow(flt)} == expected
        assert self.topic.explain(flt).kind == "hash"

    @invariant()
    def agrees(self) -> None:
        assert len(self.topic) == len(self.model)
        assert all((self.key(i) in self.topic) == (i in self.model) for i in range(8))
        self.topic.check()  # includes: live bytes equal the sizes of the live records


ReopenedTopicVsDict.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None
)
test_reopened_topic_agrees_with_a_dict = ReopenedTopicVsDict.TestCase


def _orders(n: int, start: int = 0) -> list[str]:
    return [json.dumps({"id": i, "px": i * 10}) for i in range(start, start + n)]


def test_a_clean_reopen_loads_bare_offsets_and_reads_them_from_the_log(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        keys = [r.sow_key for r in t.publish_many(_orders(50))]
        before = {k: t.get(k) for k in keys}
        stats = t.stats()
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        assert t.stats()["from_checkpoint"]
        assert t.stats()["live_bytes"] == stats["live_bytes"]
        assert {k: t.get(k) for k in keys} == before  # equal records: seq, times, data
        assert [r.doc["px"] for r in t.sow("/px >= 480", order_by="/px")] == [480, 490]


def test_updates_of_bare_offsets_keep_the_live_bytes_exact(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        store.create_topic("t", keys=["/id"]).publish_many(_orders(40))
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        t.publish_many(_orders(30, start=20))  # 20 updates of bare offsets, 10 inserts
        t.publish('{"id": 0, "px": -1}')
        t.sow_delete_by_data('{"id": 1}')
        t.check()
        fresh = store.create_topic("u", keys=["/id"])
        fresh.publish_many(_orders(50))
        fresh.publish('{"id": 0, "px": -1}')
        fresh.sow_delete_by_data('{"id": 1}')
        assert t.stats()["live_bytes"] == fresh.stats()["live_bytes"]
        t.compact()
        t.check()
        assert len(t) == 49


def test_records_with_an_expiration_survive_a_clean_reopen_and_expire(tmp_path: Path) -> None:
    clock = FakeClock()
    with SowStore(tmp_path, clock=clock) as store:
        t = store.create_topic("t", keys=["/id"], expiration="enabled")
        t.publish('{"id": 1}', expiration=10)
        t.publish('{"id": 2}')
        t.publish('{"id": 3}', expiration=100, correlation_id="c-3")
    with SowStore(tmp_path, clock=clock) as store:
        t = store.topic("t")
        rec = t.get(t.key_for({"id": 3}))
        assert rec is not None
        assert rec.correlation_id == b"c-3"
        clock.advance(20)
        assert sorted(r.doc["id"] for r in t.sow()) == [2, 3]
        clock.advance(100)
        assert [r.doc["id"] for r in t.sow()] == [2]


def test_a_checkpoint_of_another_layout_is_ignored_and_the_log_replayed(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        keys = [r.sow_key for r in t.publish_many(_orders(20))]
        before = [t.get(k) for k in keys]
        path = t.stats()["path"]
    # The side file is only trusted if it is intact: rewrite it, with a valid
    # checksum, around a blob of an older layout (seven bare columns).
    ckpt = decode_checkpoint(Path(path + ".ckpt").read_bytes())
    assert ckpt is not None
    old_layout = msgpack.packb([["k"], [0], [1], [0.0], [0.0], [b""], [1]])
    Path(path + ".ckpt").write_bytes(encode_checkpoint(attrs.evolve(ckpt, blob=old_layout)))
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        assert len(t) == 20  # replayed from the log (the blob claims one key)
        assert [t.get(k) for k in keys] == before
        t.check()


def test_the_first_read_of_a_bare_offset_checks_the_record(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        keys = [r.sow_key for r in t.publish_many(_orders(3))]
        path = t.stats()["path"]
    offset = _offset_of(path, keys[1])
    with open(path, "r+b") as fh:  # damage the payload of the second record
        fh.seek(offset + 40)
        byte = fh.read(1)
        fh.seek(offset + 40)
        fh.write(bytes([byte[0] ^ 0x01]))
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        assert t.get(keys[0]) is not None
        with pytest.raises(CorruptRecordError) as info:
            t.get(keys[1])
        assert info.value.offset == offset


def test_the_first_query_reads_bare_offsets_in_one_batch_and_checks_them(
    tmp_path: Path,
) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many(_orders(50))
        t.publish('{"id": 1000, "v": "corr"}', correlation_id=b"c-1")
        t.publish('{"id": 1001, "v": "exp"}', expiration=3600)
        expected = sorted((r.sow_key, r.data, r.seq, r.correlation_id) for r in t.sow())
        key, path = t.key_for('{"id": 7}'), t.stats()["path"]
    offset = _offset_of(path, key)
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        got = sorted((r.sow_key, r.data, r.seq, r.correlation_id) for r in t.sow("/id >= 0"))
        assert got == expected
        t.check()
    with open(path, "r+b") as fh:  # damage one payload: the first query must say so
        fh.seek(offset + 40)
        byte = fh.read(1)
        fh.seek(offset + 40)
        fh.write(bytes([byte[0] ^ 0x01]))
    with SowStore(tmp_path) as store:
        with pytest.raises(CorruptRecordError) as info:
            store.topic("t").sow("/id >= 0")
        assert info.value.offset == offset
