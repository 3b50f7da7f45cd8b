"""A reader's refresh installs runs of plain PUTs a batch at a time (``Writer.apply_many``);
its state must equal the writer's and pass ``check`` (indexes = a rebuild from records),
whatever mix of inserts, updates, deletes and records with header fields it follows."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore

_DOC = st.fixed_dictionaries(
    {"id": st.integers(0, 9)},
    optional={
        "sym": st.sampled_from(["A", "B", "05", "", 5, 2.5, None]),
        "px": st.one_of(st.integers(-2, 2), st.floats(allow_nan=True, width=16)),
    },
)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("many"), st.lists(_DOC, min_size=1, max_size=8)),
        st.tuples(st.just("corr"), _DOC),
        st.tuples(st.just("delete"), st.integers(0, 9)),
        st.tuples(st.just("refresh"), st.none()),
        st.tuples(st.just("compact"), st.none()),
    ),
    max_size=12,
)


def _state(topic: Any) -> list[tuple[str, bytes, int]]:
    return sorted((r.sow_key, r.data, r.seq) for r in topic.sow())


def _queried(topic: Any) -> list[list[str]]:
    filters = ["/sym = 'A'", "/sym = 5", "/px > 0", "/px BETWEEN -1 AND 1", "/sym IS NULL"]
    return [sorted(r.sow_key for r in topic.sow(f)) for f in filters]


def _topic(store: SowStore) -> Any:
    return store.create_topic(
        "t", keys=["/id"], hash_indexes=[["/sym"]], indexes=["/px"], auto_compact=None
    )


@pytest.mark.parametrize("checkpoint", [False, True])
@settings(max_examples=30, deadline=None)
@given(ops=_OPS)
def test_refresh_follows_the_writer(
    tmp_path_factory: Any, checkpoint: bool, ops: list[tuple[str, Any]]
) -> None:
    directory: Path = tmp_path_factory.mktemp("refresh")
    with contextlib.ExitStack() as stack:
        if checkpoint:  # the reader opens from a checkpoint: saved buckets, values filled late
            with SowStore(directory) as first:
                docs = [{"id": i, "sym": "AB"[i % 2], "px": i} for i in range(8)]
                _topic(first).publish_many([orjson.dumps(doc) for doc in docs])
            reader = stack.enter_context(SowStore(directory, readonly=True))
            follower = reader.topic("t")
            assert not follower._p.indexes.values_known
        store = stack.enter_context(SowStore(directory))
        topic = store.topic("t") if checkpoint else _topic(store)
        topic.publish('{"id": 0, "sym": "A", "px": 1}')
        store.flush()
        if not checkpoint:
            reader = stack.enter_context(SowStore(directory, readonly=True))
            follower = reader.topic("t")
        for op, arg in ops:
            if op == "many":
                topic.publish_many([orjson.dumps(doc) for doc in arg])
            elif op == "corr":
                topic.publish(orjson.dumps(arg), correlation_id=b"c")
            elif op == "delete":
                topic.sow_delete_by_keys([topic.key_for({"id": arg})])
            elif op == "compact":
                topic.compact()
            else:
                reader.refresh()
        store.flush()
        reader.refresh()
        assert _state(follower) == _state(topic)
        assert _queried(follower) == _queried(topic)
        follower.check()


def test_a_reader_carries_its_state_over_a_compaction(tmp_path: Path) -> None:
    """The reader keeps its key map and indexes across the writer's compaction: the
    keys move to their copies, and only what came after the last refresh is applied
    (the records before it, deleted keys and later updates, whatever their mix)."""
    with SowStore(tmp_path) as store, SowStore(tmp_path, readonly=True) as reader:
        topic = _topic(store)
        docs = [{"id": i, "sym": "AB"[i % 2], "px": i} for i in range(10)]
        topic.publish_many([orjson.dumps(doc) for doc in docs])
        store.flush()
        reader.refresh()
        follower = reader.topic("t")
        assert len(follower.sow("/sym = 'A'")) == 5
        parts = follower._p
        topic.publish(orjson.dumps({"id": 3, "sym": "C", "px": 30}))  # before the compaction
        topic.sow_delete_by_keys([topic.key_for({"id": 4})])
        topic.compact()
        topic.publish(orjson.dumps({"id": 5, "sym": "C", "px": 50}))  # after it
        topic.publish(orjson.dumps({"id": 11, "sym": "A", "px": 1}))
        topic.sow_delete_by_keys([topic.key_for({"id": 6})])
        store.flush()
        assert reader.refresh() == 9
        assert follower._p is parts  # carried over, not loaded anew
        assert _state(follower) == _state(topic)
        assert _queried(follower) == _queried(topic)
        assert sorted(r.doc["id"] for r in follower.sow("/sym = 'C'")) == [3, 5]
        follower.check()
        with SowStore(tmp_path, readonly=True) as fresh:  # the same key map as a load's
            loaded = fresh.topic("t")
            assert sorted(follower._p.keys.offsets()) == sorted(loaded._p.keys.offsets())
            assert follower.stats()["live_bytes"] == loaded.stats()["live_bytes"]
        topic.publish(orjson.dumps({"id": 0, "sym": "C", "px": 0}))
        store.flush()
        assert reader.refresh() == 1
        assert _state(follower) == _state(topic)
        follower.check()


def test_a_reader_reloads_when_the_new_file_is_not_a_copy_of_what_it_followed(
    tmp_path: Path,
) -> None:
    """A file put in place of the log that holds keys the reader never saw is not a
    compaction's copy: the key map the carry-over began to move is dropped and the
    topic is loaded from the new file."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    with SowStore(theirs) as other:
        copy = _topic(other)
        copy.publish_many([orjson.dumps({"id": 100 + i, "sym": "B", "px": i}) for i in range(5)])
        copy.compact()
    with SowStore(ours) as store:
        _topic(store).publish_many(
            [orjson.dumps({"id": i, "sym": "AB"[i % 2], "px": i}) for i in range(10)]
        )
    with SowStore(ours, readonly=True) as reader:
        follower = reader.topic("t")
        parts = follower._p
        assert len(follower.sow("/sym = 'A'")) == 5
        (ours / "t.json.sow.ckpt").unlink()  # as a compaction leaves it: no checkpoint
        (theirs / "t.json.sow").replace(ours / "t.json.sow")  # renamed in, as it does
        assert reader.refresh() == 5
        assert follower._p is not parts  # loaded anew
        assert sorted(r.doc["id"] for r in follower.sow()) == [100, 101, 102, 103, 104]
        assert follower.sow("/sym = 'A'") == []
        assert len(follower.sow("/sym = 'B'")) == 5
        follower.check()
