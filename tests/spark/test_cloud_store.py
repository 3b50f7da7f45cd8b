"""Versioned sharded stores on S3 (moto's server on 127.0.0.1) and on file:// URLs.

Checks the object layout from the outside: what a commit uploads (only the log's new
tail), what a reader sees (whole versions only), what two writers of one version
get, what vacuum removes, and the one-call upload and download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import s3fs

from sowlib.errors import ConfigError, StoreNotFoundError
from sowlib.spark.cloud import download_sharded, upload_sharded
from sowlib.spark.remote import ShardConflictError
from sowlib.spark.routing import shard_of
from sowlib.spark.shards import open_sharded
from sowlib.spark.shardwriter import ShardWriter
from sowlib.spark.versions import ShardedStore
from sowlib.store import SowStore

pytestmark = pytest.mark.spark


def _objects(url: str) -> dict[str, int]:
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    return {p: fs.info(p)["size"] for p in fs.find(url.removeprefix("s3://"))}


def _docs(store: SowStore) -> dict[int, Any]:
    return {r.doc["id"]: r.doc for r in store.topic("t").sow()}


def test_new_version_uploads_only_the_log_tail(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/store"
    store = ShardedStore.create(url, "t", shards=1, keys=["/id"], cache_dir=tmp_path / "c1")
    with ShardWriter(store, 0, 0) as w:
        w.topic.publish_many([{"id": i, "v": "x" * 100} for i in range(2_000)])
        first = w.commit()
    store.commit({0: first}, base=store.latest())
    before = _objects(url)
    with ShardWriter(store, 0, first) as w:
        w.topic.publish_many([{"id": i, "v": "y"} for i in range(5)])
        second = w.commit()
    store.commit({0: second}, base=store.latest())
    new = {p: n for p, n in _objects(url).items() if p not in before}
    pieces = [n for p, n in new.items() if "/data/" in p]
    assert len(pieces) == 1  # the tail only; the checkpoint is kept, the tail replays
    assert pieces[0] < 1_000 < min(n for p, n in before.items() if p.endswith(".sow"))
    # a fresh machine sees the whole latest version
    other = ShardedStore(url, cache_dir=tmp_path / "c2")
    with other.open_shard(0) as s:
        docs = _docs(s)
    assert len(docs) == 2_000
    assert docs[3]["v"] == "y"
    assert docs[10]["v"] == "x" * 100
    # and any older version, whole
    with other.open_shard(0, first) as s:
        assert _docs(s)[3]["v"] == "x" * 100


def test_compaction_uploads_a_new_base(tmp_path: Path) -> None:
    url = (tmp_path / "root").as_uri()
    store = ShardedStore.create(url, "t", shards=1, keys=["/id"], cache_dir=tmp_path / "c")
    with ShardWriter(store, 0, 0) as w:
        for n in range(3):
            w.topic.publish_many([{"id": i, "n": n} for i in range(500)])
        v1 = w.commit()
    with ShardWriter(store, 0, v1) as w:
        w.topic.compact()
        w.topic.publish({"id": 0, "n": 9})
        v2 = w.commit()
    store.commit({0: v2}, base=store.latest())
    log = next(f for f in store.shard_doc(0, v2)["files"] if f.endswith(".sow"))
    assert len(store.shard_doc(0, v2)["files"][log]["pieces"]) == 1
    assert (
        store.shard_doc(0, v2)["files"][log]["size"] < store.shard_doc(0, v1)["files"][log]["size"]
    )
    with ShardedStore(url, cache_dir=tmp_path / "d").open_shard(0) as s:
        docs = _docs(s)
    assert len(docs) == 500
    assert docs[0]["n"] == 9
    assert docs[1]["n"] == 2


def test_two_writers_of_one_shard_version(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/race"
    store = ShardedStore.create(url, "t", shards=2, keys=["/id"], cache_dir=tmp_path / "c")
    base = store.latest()
    a = ShardWriter(store, 0, 0, "writer-a")
    b = ShardWriter(store, 0, 0, "writer-b")
    a.topic.publish({"id": 1, "by": "a"})
    b.topic.publish({"id": 2, "by": "b"})
    version = a.commit()
    with pytest.raises(ShardConflictError) as info:
        b.commit()
    assert "shard-0000 version 1" in str(info.value)
    assert info.value.holder == "writer-a"
    b.discard()
    winner = store.commit({0: version}, base=base)
    # the store commit is guarded the same way
    with pytest.raises(ShardConflictError):
        store.commit({1: 0}, base=base)
    # nothing lost: the loser retries on the new version
    with ShardWriter(store, 0, winner.shards[0], "writer-b") as retry:
        retry.topic.publish({"id": 2, "by": "b"})
        store.commit({0: retry.commit()}, base=winner)
    with ShardedStore(url, cache_dir=tmp_path / "r").open_shard(0) as s:
        assert _docs(s) == {1: {"id": 1, "by": "a"}, 2: {"id": 2, "by": "b"}}


def test_same_tag_adopts_the_committed_version(tmp_path: Path) -> None:
    url = (tmp_path / "root").as_uri()
    store = ShardedStore.create(url, "t", shards=1, keys=["/id"], cache_dir=tmp_path / "c")
    first = ShardWriter(store, 0, 0, "q#4")
    first.topic.publish({"id": 1, "n": 1})
    assert first.commit() == 1
    assert not first.adopted
    again = ShardWriter(store, 0, 0, "q#4")  # the same task run twice
    again.topic.publish({"id": 1, "n": 1})
    assert again.commit() == 1
    assert again.adopted
    store.commit({0: 1}, base=store.latest())
    with store.open_shard(0) as s:
        assert s.topic("t").stats()["last_seq"] == 1  # applied once


def test_vacuum_keeps_the_latest_and_recent(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/vac"
    store = ShardedStore.create(url, "t", shards=1, keys=["/id"], cache_dir=tmp_path / "c")
    version, commit = 0, store.latest()
    for n in range(3):
        with ShardWriter(store, 0, version) as w:
            w.topic.compact()
            w.topic.publish_many([{"id": i, "n": n} for i in range(50)])
            version = w.commit()
        commit = store.commit({0: version}, base=commit)
    orphan = ShardWriter(store, 0, version, "lost")
    orphan.topic.publish({"id": 99})
    orphan.commit()  # never committed to the store
    assert store.vacuum(3600) == {"commits": 0, "shard_versions": 0, "pieces": 0}
    removed = store.vacuum(0)
    assert removed["commits"] == 3
    assert removed["shard_versions"] == 3
    assert removed["pieces"] > 0
    with ShardedStore(url, cache_dir=tmp_path / "fresh").open_shard(0) as s:
        assert {d["n"] for d in _docs(s).values()} == {2}
        assert 99 not in _docs(s)
    with pytest.raises(StoreNotFoundError):
        store.commit_at(1)
    with pytest.raises(ConfigError):
        store.vacuum(-1)


def test_upload_and_download_in_one_call(bucket: str, tmp_path: Path) -> None:
    local = tmp_path / "built"
    with SowStore(local) as s:
        s.create_topic("t", keys=["/id"]).publish_many([{"id": i, "sq": i * i} for i in range(300)])
    url = f"{bucket}/up"
    store = upload_sharded(local, url, topic="t", shards=3)
    assert store.shards == 3
    shards = open_sharded(url)
    try:
        for index, shard in enumerate(shards):
            ids = list(_docs(shard))
            assert ids
            assert all(shard_of([i], 3) == index for i in ids)
        assert sum(len(s.topic("t")) for s in shards) == 300
    finally:
        for s in shards:
            s.close()
    out = download_sharded(url, tmp_path / "down")
    assert len(out) == 3
    # the download is a local sharded store, and uploads again as it is
    again = upload_sharded(tmp_path / "down", f"{bucket}/again")
    merged: dict[int, Any] = {}
    for s in open_sharded(f"{bucket}/again"):
        merged.update(_docs(s))
        s.close()
    assert merged == {i: {"id": i, "sq": i * i} for i in range(300)}
    assert again.topic == "t"
    with pytest.raises(ConfigError):
        upload_sharded(local, url, topic="t")
    with pytest.raises(ConfigError):
        download_sharded(url, tmp_path / "down")
    with pytest.raises(StoreNotFoundError):
        ShardedStore(f"{bucket}/nothing")
