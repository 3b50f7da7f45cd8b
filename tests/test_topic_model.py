"""Model-based test: a persistent Topic driven beside a dict must always agree (STYLE §8)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sowlib import SowStore

IDS = st.sampled_from([1, 2, 3, 4, 5])
VALUES = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none(), st.booleans())


class TopicVsDict(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.store = SowStore(self.dir)
        self.topic = self.store.create_topic("t", keys=["/id"], auto_compact=None)
        self.model: dict[int, dict[str, Any]] = {}
        self.reader: SowStore | None = None

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _reopen(self) -> None:
        self.store.close()
        self.store = SowStore(self.dir)
        self.topic = self.store.topic("t")

    @rule(i=IDS, v=VALUES)
    def publish(self, i: int, v: Any) -> None:
        self.topic.publish({"id": i, "v": v})
        self.model[i] = {"id": i, "v": v}

    @rule(i=IDS, w=VALUES)
    def delta(self, i: int, w: Any) -> None:
        self.topic.delta_publish({"id": i, "w": w})
        self.model[i] = {**self.model.get(i, {}), "id": i, "w": w}

    @rule(i=IDS)
    def delete_by_key(self, i: int) -> None:
        n = self.topic.sow_delete_by_keys([self.topic.key_for({"id": i})])
        assert n == (1 if i in self.model else 0)
        self.model.pop(i, None)

    @rule(i=IDS)
    def delete_by_data(self, i: int) -> None:
        n = self.topic.sow_delete_by_data({"id": i})
        assert n == (1 if i in self.model else 0)
        self.model.pop(i, None)

    @rule()
    def reopen(self) -> None:
        self._reopen()

    @rule(data=st.data())
    def torn_write(self, data: st.DataObject) -> None:
        # A record that was never acknowledged: the writer dies mid-append.
        path = Path(self.topic._log.path)
        # Right after the last record. (Not "the file without its trailing zero
        # bytes": a record may end in zero bytes, and the garbage then overwrote an
        # acknowledged record whenever the last checksum byte happened to be 0.)
        end = self.topic._log.end_offset
        self.store.close()
        blob = b'{"id": 1, "v": "never acknowledged"}' * 2
        cut = data.draw(st.integers(1, 40))
        with path.open("r+b") as fh:
            fh.seek(end)
            fh.write(b"\xa5" * cut + blob[:cut])
        self.store = SowStore(self.dir)
        self.topic = self.store.topic("t")

    @rule()
    def compact(self) -> None:
        self.topic.compact()

    @rule()
    def open_reader(self) -> None:
        if self.reader is None:
            self.reader = SowStore(self.dir, readonly=True)

    @precondition(lambda self: self.reader is not None)
    @rule()
    def reader_agrees(self) -> None:
        assert self.reader is not None
        self.reader.refresh()
        got = {r.doc["id"]: r.doc for r in self.reader.topic("t").sow()}
        assert got == self.model

    @invariant()
    def agrees(self) -> None:
        got = {r.doc["id"]: r.doc for r in self.topic.sow()}
        assert got == self.model
        assert len(self.topic) == len(self.model)
        self.topic.check()


TopicVsDict.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
test_topic_agrees_with_a_dict = TopicVsDict.TestCase
