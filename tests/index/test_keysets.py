"""Index key sets are dicts of keys the cyclic collector does not track.

A set is always tracked, and a full collection walks every member of every tracked
set: with millions of keys filed in an index that is a pause of seconds whenever
CPython decides to collect. A dict holding only atomic keys and None is not tracked.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex
from sowlib.paths import parse_path


def _buckets(topic: object) -> list[object]:
    indexes = topic.indexes  # type: ignore[attr-defined]
    out: list[object] = []
    for index in indexes.hashes:
        out.extend(index.export()[1])
    for memo in indexes.memos.values():
        for mapping in memo.export()[0]:
            out.extend(mapping.values())
    return out


@pytest.mark.parametrize("write", ["publish", "publish_many", "reopen", "crash"])
def test_no_index_key_set_is_tracked_by_the_collector(tmp_path: Path, write: str) -> None:
    docs = [{"id": i, "g": f"g{i % 5}", "px": i % 17, "s": str(i % 3)} for i in range(300)]
    store = SowStore(tmp_path)
    topic = store.create_topic(
        "t", keys=["/id"], hash_indexes=[["/g"], ["/g", "/s"]], indexes=["/px", "/s"]
    )
    if write == "publish":
        for doc in docs:
            topic.publish(doc)
    else:
        topic.publish_many(docs)
    topic.sow_delete("/px = 3")
    if write in ("reopen", "crash"):
        path = topic.path
        if write == "crash":
            Path(path + ".image").write_bytes(Path(path).read_bytes())
        store.close()
        if write == "crash":
            Path(path + ".image").replace(path)
            Path(path + ".ckpt").unlink()
        store = SowStore(tmp_path)
        topic = store.topic("t")
        topic.publish({"id": 1000, "g": "g1", "px": 1, "s": "1"})
    buckets = _buckets(topic)
    assert len(buckets) > 20
    assert not any(gc.is_tracked(b) for b in buckets)
    topic.check()
    store.close()


def test_a_bucket_holds_each_key_once_and_empties_away() -> None:
    index = HashIndex(["/g"])
    index.add(1, {"g": "a"})
    index.add(1, {"g": "a"})
    index.add(2, {"g": "a"})
    assert sorted(index.lookup([["a"]])) == [1, 2]
    index.remove(1, {"g": "a"})
    index.remove(2, {"g": "a"})
    assert index.export()[0] == []
    memo = MemoIndex(parse_path("/v"))
    memo.add(1, {"v": 5})
    memo.add(2, {"v": 5})
    memo.remove(1, {"v": 5})
    assert [list(b) for b in memo.export()[0][0].values()] == [[2]]
    assert not gc.is_tracked(memo.export()[0][0][5])
