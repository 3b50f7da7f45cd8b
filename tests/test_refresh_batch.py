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


def _load_matches(follower: Any, path: Path) -> None:
    """The follower's key map and bytes equal those of a fresh load of ``path``."""
    with SowStore(path, readonly=True) as fresh:
        loaded = fresh.topic("t")
        assert sorted(follower._p.keys.offsets()) == sorted(loaded._p.keys.offsets())
        assert follower.stats()["live_bytes"] == loaded.stats()["live_bytes"]


@pytest.mark.parametrize("after", ["puts", "a delete", "nothing"])
def test_a_carry_over_forgets_the_keys_deleted_before_the_compaction(
    tmp_path: Path, after: str
) -> None:
    """A key the reader holds that the compacted file no longer has (deleted between the
    reader's last refresh and the compaction) is forgotten, whatever follows the
    compaction; keys updated meanwhile are held at their new versions."""
    with SowStore(tmp_path) as store, SowStore(tmp_path, readonly=True) as reader:
        topic = _topic(store)
        topic.publish_many(
            [orjson.dumps({"id": i, "sym": "AB"[i % 2], "px": i}) for i in range(10)]
        )
        store.flush()
        reader.refresh()
        follower = reader.topic("t")
        assert len(follower.sow("/sym = 'A'")) == 5
        parts = follower._p
        topic.publish(orjson.dumps({"id": 2, "sym": "B", "px": 20}))  # updated meanwhile
        topic.sow_delete_by_keys([topic.key_for({"id": 4}), topic.key_for({"id": 7})])
        topic.compact()
        if after == "puts":
            topic.publish(orjson.dumps({"id": 8, "sym": "A", "px": 80}))
            topic.publish(orjson.dumps({"id": 12, "sym": "A", "px": 1}))
        elif after == "a delete":
            topic.sow_delete_by_keys([topic.key_for({"id": 9})])
        store.flush()
        reader.refresh()
        assert follower._p is parts  # carried over
        assert _state(follower) == _state(topic)
        assert _queried(follower) == _queried(topic)
        assert {r.doc["id"] for r in follower.sow()}.isdisjoint({4, 7})
        follower.check()
        _load_matches(follower, tmp_path)


def test_a_carry_over_with_nothing_deleted_keeps_every_key(tmp_path: Path) -> None:
    """Every key held outside the copied records is named by a later record (updated
    before and after the compaction): nothing is forgotten."""
    with SowStore(tmp_path) as store, SowStore(tmp_path, readonly=True) as reader:
        topic = _topic(store)
        topic.publish_many([orjson.dumps({"id": i, "sym": "A", "px": i}) for i in range(10)])
        store.flush()
        reader.refresh()
        follower = reader.topic("t")
        parts = follower._p
        topic.publish_many([orjson.dumps({"id": i, "sym": "B", "px": -i}) for i in (1, 3, 5)])
        topic.compact()
        topic.publish_many([orjson.dumps({"id": i, "sym": "C", "px": i}) for i in (3, 9, 11)])
        store.flush()
        assert reader.refresh() == 11
        assert follower._p is parts
        assert len(follower) == len(topic) == 11
        assert _state(follower) == _state(topic)
        assert _queried(follower) == _queried(topic)
        follower.check()
        _load_matches(follower, tmp_path)


def test_a_reader_reloads_a_file_whose_records_hold_its_keys_in_another_order(
    tmp_path: Path,
) -> None:
    """A file of the keys the reader holds, in an order no compaction of what it followed
    gives (so other versions of them), is loaded anew, not carried over."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    with SowStore(theirs) as other:
        _topic(other).publish_many(
            [orjson.dumps({"id": i, "sym": "B", "px": 100 + i}) for i in reversed(range(10))]
        )
    with SowStore(ours) as store:
        _topic(store).publish_many(
            [orjson.dumps({"id": i, "sym": "A", "px": i}) for i in range(10)]
        )
    with SowStore(ours, readonly=True) as reader:
        follower = reader.topic("t")
        parts = follower._p
        assert len(follower.sow("/sym = 'A'")) == 10
        (ours / "t.json.sow.ckpt").unlink(missing_ok=True)
        (theirs / "t.json.sow").replace(ours / "t.json.sow")
        reader.refresh()
        assert follower._p is not parts  # loaded anew
        assert follower.sow("/sym = 'A'") == []
        assert sorted(r.doc["px"] for r in follower.sow("/sym = 'B'")) == list(range(100, 110))
        follower.check()
