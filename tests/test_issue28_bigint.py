"""Issue 28 item 4: one big integer in an indexed field must not lock the store.

A JSON number outside msgpack's range (>= 2**64 or < -2**63) is accepted by publish;
it used to make every ``close()`` raise msgpack's ``OverflowError`` and leave the log's
writer lock held until the process exited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sowlib
from sowlib.errors import CloseError, SowError
from sowlib.index import IndexSet
from sowlib.index.persist import dump_indexes, index_snapshot, load_indexes

BIG = [2**64, -(2**63) - 1, 10**40, -(10**300), int("7" * 4000)]


@pytest.mark.parametrize("value", BIG, ids=lambda v: f"{len(str(v))}digits")
def test_issue28_big_integer_in_an_indexed_field_closes_and_reopens(
    tmp_path: Path, value: int
) -> None:
    path = str(tmp_path / "s")
    store = sowlib.SowStore(path)
    topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/v"]], indexes=["/v"])
    topic.publish(f'{{"id": 1, "v": {value}}}')
    topic.publish('{"id": 2, "v": 5}')
    store.close()  # raised OverflowError with the writer lock left held

    with sowlib.SowStore(path) as again:  # StoreLockedError before the fix
        topic = again.topic("t")
        if abs(value) < 10**308:  # a filter's number literal is within the float range
            assert [r.doc["id"] for r in topic.sow(f"/v = {value}")] == [1]
        above = sorted(r.doc["id"] for r in topic.sow("/v > 6"))
        assert above == ([1] if value > 0 else [])
        topic.check()
        topic.publish('{"id": 3, "v": 7}')
    with sowlib.SowStore(path) as third:
        assert len(third.topic("t")) == 3


def test_issue28_big_integers_survive_a_save_and_load_of_the_indexes() -> None:
    built = IndexSet(["/id"], [["/v"]], ["/v"])
    docs = [{"id": i, "v": v} for i, v in enumerate([*BIG, 1, 2**64 - 1, -(2**63)])]
    keys = list(range(100, 100 + len(docs)))
    for key, doc in zip(keys, docs, strict=True):
        built.on_put(key, None, doc)
    loaded = IndexSet(["/id"], [["/v"]], ["/v"])
    assert load_indexes(loaded, dump_indexes(built, keys), keys)
    assert index_snapshot(loaded) == index_snapshot(built)


def test_issue28_close_releases_every_lock_when_the_checkpoint_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "s")
    store = sowlib.SowStore(path)
    topic = store.create_topic("t", keys=["/id"])
    topic.publish('{"id": 1}')

    def broken(writer: object) -> bytes:
        raise RuntimeError("injected")

    monkeypatch.setattr("sowlib.topic.facade.checkpoint_blob", broken)
    with pytest.raises(CloseError) as info:
        store.close()
    assert isinstance(info.value, SowError)
    assert isinstance(info.value.__cause__, RuntimeError)
    store.close()  # idempotent
    monkeypatch.undo()
    with sowlib.SowStore(path) as again:  # both locks were released
        assert again.topic("t").lookup(1) is not None
