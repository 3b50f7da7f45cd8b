"""The shared half of the Topic-against-a-dict state machines (tests/test_topic_model.py,
tests/test_checkpoint_slots.py): a persistent store, a model dict, and the write rules."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from sowlib import SowStore

#: The key values the machines publish under (``/id``), all of them: ``range(8)``.
IDS = st.integers(0, 7)
VALUES = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none(), st.booleans())


class TopicAgainstDict(RuleBasedStateMachine):
    """A topic ``t`` keyed on ``/id`` in a store on disk, and the dict it must equal."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.store = SowStore(self.dir)
        # a hash index on /v: queries by value go through index upkeep, not a scan
        self.topic = self.store.create_topic(
            "t", keys=["/id"], hash_indexes=[["/v"]], auto_compact=None
        )
        self.model: dict[int, dict[str, Any]] = {}
        self.reader: SowStore | None = None

    def teardown(self) -> None:
        if self.reader is not None:
            self.reader.close()
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def key(self, i: int) -> str:
        return self.topic.key_for({"id": i})

    def _open_again(self) -> None:
        """Open the store again, after the caller closed (or crashed and damaged) it."""
        self.store = SowStore(self.dir)
        self.topic = self.store.topic("t")

    @rule()
    def compact(self) -> None:
        self.topic.compact()

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
        assert self.topic.sow_delete_by_keys([self.key(i)]) == (1 if i in self.model else 0)
        self.model.pop(i, None)

    @rule(i=IDS)
    def delete_by_data(self, i: int) -> None:
        assert self.topic.sow_delete_by_data({"id": i}) == (1 if i in self.model else 0)
        self.model.pop(i, None)
