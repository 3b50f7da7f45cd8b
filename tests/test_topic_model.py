"""Model-based test: a persistent Topic driven beside a dict must always agree (STYLE §8)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from sowlib import SowStore

from .machines import TopicAgainstDict


class TopicVsDict(TopicAgainstDict):
    def _reopen(self) -> None:
        self.store.close()
        self._open_again()

    @rule()
    def reopen(self) -> None:
        self._reopen()

    @rule(data=st.data())
    def torn_write(self, data: st.DataObject) -> None:
        # A record that was never acknowledged: the writer dies mid-append.
        path = Path(self.topic.stats()["path"])
        # Right after the last record. (Not "the file without its trailing zero
        # bytes": a record may end in zero bytes, and the garbage then overwrote an
        # acknowledged record whenever the last checksum byte happened to be 0.)
        end = self.topic.stats()["used_bytes"]
        self.store.close()
        blob = b'{"id": 1, "v": "never acknowledged"}' * 2
        cut = data.draw(st.integers(1, 40))
        with path.open("r+b") as fh:
            fh.seek(end)
            fh.write(b"\xa5" * cut + blob[:cut])
        self._open_again()

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
