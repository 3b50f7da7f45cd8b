"""A read-only store's refresh through the one-call path (a run of common records then
nothing written: ``recordread.tail_run``, its lists applied as they are, index values
read when a query next reads the indexes) against the same refresh with that path
turned off (the general walk, ``verify_columns``, and the general apply): two followers
of one writer must apply the same records and hold the same state after every
refresh, whatever mix of runs of 1 and 10 records, updates, deletes, records with a
correlation id, compactions and new topics they follow."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sowlib import SowStore
from sowlib.storage import reader

IDS = st.integers(0, 30)
SYMS = st.sampled_from(["A", "B", "C", 5, None])
TOPICS = st.sampled_from(["t", "p"])  # indexed, and without field indexes
_FILTERS = ["/sym = 'A'", "/sym = 5", "/px > 0", "/px BETWEEN -1 AND 1", "/sym IS NULL"]


def _doc(i: int, sym: Any, px: int) -> bytes:
    return orjson.dumps({"id": i, "sym": sym, "px": px})


def _state(topic: Any) -> list[tuple[str, bytes, int]]:
    return sorted((r.sow_key, r.data, r.seq) for r in topic.sow())


def _queried(topic: Any) -> list[list[str]]:
    return [sorted(r.sow_key for r in topic.sow(f)) for f in _FILTERS]


class RunsVsGeneral(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="refreshruns"))
        self.store = SowStore(self.dir)
        self.store.create_topic(
            "t", keys=["/id"], hash_indexes=[["/sym"]], indexes=["/px"], auto_compact=None
        )
        self.store.create_topic("p", keys=["/id"], auto_compact=None)
        self.fast = SowStore(self.dir, readonly=True)
        self.general = SowStore(self.dir, readonly=True)
        self.extra = 0  # topics created after the followers opened
        self.px = 0

    def teardown(self) -> None:
        for store in (self.general, self.fast, self.store):
            store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _next_px(self) -> int:
        self.px = (self.px + 1) % 5
        return self.px - 2

    @rule(name=TOPICS, i=IDS, sym=SYMS)
    def publish_one(self, name: str, i: int, sym: Any) -> None:
        self.store.topic(name).publish(_doc(i, sym, self._next_px()))

    @rule(name=TOPICS, first=IDS, sym=SYMS)
    def publish_ten(self, name: str, first: int, sym: Any) -> None:
        docs = [_doc((first + n) % 31, sym, self._next_px()) for n in range(10)]
        self.store.topic(name).publish_many(docs)

    @rule(name=TOPICS, i=IDS)
    def publish_with_correlation_id(self, name: str, i: int) -> None:
        self.store.topic(name).publish(_doc(i, "B", 1), correlation_id=b"c")

    @rule(name=TOPICS, i=IDS)
    def delete(self, name: str, i: int) -> None:
        topic = self.store.topic(name)
        topic.sow_delete_by_keys([topic.key_for({"id": i})])

    @rule(name=TOPICS)
    def compact(self, name: str) -> None:
        self.store.topic(name).compact()

    @rule(i=IDS)
    def new_topic(self, i: int) -> None:
        self.extra += 1
        topic = self.store.create_topic(f"n{self.extra}", keys=["/id"], indexes=["/px"])
        topic.publish(_doc(i, "A", 1))

    @rule(query=st.booleans())
    def refresh(self, query: bool) -> None:
        got = self.fast.refresh()
        with mock.patch.object(reader, "NATIVE_TAIL_RUN", None):
            want = self.general.refresh()
        assert got == want
        if query:  # a query settles the deferred index upkeep now, not only at the end
            for store in (self.fast, self.general):
                for topic in store.topics():
                    topic.sow("/sym = 'A'")

    @invariant()
    def followers_agree(self) -> None:
        names = sorted(t.name for t in self.general.topics())
        assert sorted(t.name for t in self.fast.topics()) == names
        for name in names:
            fast, general = self.fast.topic(name), self.general.topic(name)
            assert _state(fast) == _state(general)
            assert _queried(fast) == _queried(general)

    def check_against_the_writer(self) -> None:
        self.refresh(False)
        for name in (t.name for t in self.store.topics()):
            assert _state(self.fast.topic(name)) == _state(self.store.topic(name))
            assert _queried(self.fast.topic(name)) == _queried(self.store.topic(name))
            self.fast.topic(name).check()

    @rule()
    def caught_up(self) -> None:
        self.check_against_the_writer()


RunsVsGeneral.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
test_the_one_call_refresh_agrees_with_the_general_one = RunsVsGeneral.TestCase


def test_a_follower_of_runs_of_one_and_ten_records_matches_the_writer(tmp_path: Path) -> None:
    """Runs of 1 and 10 new records (the benchmark's steps), refreshed one at a time,
    counted, found by the indexes, and equal to the writer's topic."""
    with SowStore(tmp_path) as store, SowStore(tmp_path, readonly=True) as follower:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/sym"]], indexes=["/px"])
        topic.publish_many([_doc(i, "AB"[i % 2], i) for i in range(100)])
        assert follower.refresh() == 100
        read = follower.topic("t")
        at = 100
        for k in (1, 10, 1, 10):
            topic.publish_many([_doc(at + n, "C", -n) for n in range(k)])
            at += k
            assert follower.refresh() == k
            assert follower.refresh() == 0
        assert len(read.sow("/sym = 'C'")) == 22
        assert sorted(r.doc["id"] for r in read.sow("/px < -8")) == [110, 121]
        topic.publish(_doc(3, "C", 0))  # an update moves the key between buckets
        assert follower.refresh() == 1
        assert len(read.sow("/sym = 'C'")) == 23
        assert _state(read) == _state(topic)
        read.check()


def test_a_nested_indexed_field_is_read_from_the_documents_when_the_upkeep_runs(
    tmp_path: Path,
) -> None:
    """An index on a field below the top level: the deferred values come from decoded
    documents (no byte read), after runs of 1 and 10 records and an update."""
    with SowStore(tmp_path) as store, SowStore(tmp_path, readonly=True) as follower:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/a/b"]], indexes=["/a/c"])
        docs = [orjson.dumps({"id": i, "a": {"b": i % 3, "c": i}}) for i in range(11)]
        topic.publish(docs[0])
        assert follower.refresh() == 1
        topic.publish_many(docs[1:])
        assert follower.refresh() == 10
        topic.publish(orjson.dumps({"id": 4, "a": {"b": 7, "c": -1}}))
        assert follower.refresh() == 1
        read = follower.topic("t")
        assert sorted(r.doc["id"] for r in read.sow("/a/b = 1")) == [1, 7, 10]
        assert [r.doc["id"] for r in read.sow("/a/b = 7")] == [4]
        assert sorted(r.doc["id"] for r in read.sow("/a/c < 2")) == [0, 1, 4]
        assert _state(read) == _state(topic)
        read.check()
