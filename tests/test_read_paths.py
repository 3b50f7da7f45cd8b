"""Read paths: ``get`` without the lock, deferred documents, the per-key Record cache.

Each path must return exactly what a plain locked read would, whatever happened to
the key before (publish, update, delete, expiry, compaction, reopen, a first query).
"""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.record import DeferredDoc, Record, passing_doc

from .conftest import FakeClock


def test_deferred_doc_decodes_once_and_shares_the_result() -> None:
    calls: list[bytes] = []

    def decode(data: bytes) -> Any:
        calls.append(data)
        return json.loads(data)

    rec = Record("k", b'{"a": 1}', 1, 1.0, None, "t", "json", b"", DeferredDoc(decode))
    assert calls == []
    assert rec.doc == {"a": 1}
    assert rec.doc is rec.doc
    assert calls == [b'{"a": 1}']
    assert rec == Record("k", b'{"a": 1}', 1, 1.0, None, "t", "json")  # doc is not compared
    assert rec._asdict()["doc"] == {"a": 1}
    again = pickle.loads(pickle.dumps(rec))
    assert again == rec
    assert again.doc == {"a": 1}
    assert "doc" not in repr(rec)


def test_passing_doc_decodes_without_keeping_and_reuses_a_kept_document() -> None:
    rec = Record("k", b'{"a": 1}', 1, 1.0, None, "t", "json", b"", DeferredDoc(json.loads))
    first = passing_doc(rec)
    assert first == {"a": 1}
    assert passing_doc(rec) is not first  # nothing kept: decoded again
    kept = rec.doc
    assert passing_doc(rec) is kept  # once kept (rec.doc), the kept document is given
    plain = Record("p", b"{}", 1, 1.0, None, "t", "json", b"", {"b": 2})
    assert passing_doc(plain) == {"b": 2}


def test_one_deferred_doc_serves_many_records_each_with_its_own_document() -> None:
    shared = DeferredDoc(json.loads)
    a = Record("a", b'{"v": 1}', 1, 1.0, None, "t", "json", b"", shared)
    b = Record("b", b'{"v": 2}', 2, 1.0, None, "t", "json", b"", shared)
    assert (a.doc, b.doc) == ({"v": 1}, {"v": 2})
    assert a._replace(data=b'{"v": 3}').doc == {"v": 3}
    assert a.doc == {"v": 1}
    c = Record("c", b'{"v": 4}', 3, 1.0, None, "t", "json", b"", shared)
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(c.doc)) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(doc is seen[0] for doc in seen)  # every reader got the one kept document


def test_get_of_a_published_key_defers_the_decode(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    key = t.publish('{"id": 1, "v": [1, 2]}').sow_key
    rec = t.get(key)
    assert rec.data == b'{"id": 1, "v": [1, 2]}'
    assert rec.doc == {"id": 1, "v": [1, 2]}
    for _ in range(300):  # a key read again and again enters the cache (1 read in 8)
        t.get(key)
    assert t.get(key) is t.get(key)  # cached until the key changes
    t.publish('{"id": 1, "v": []}')
    assert t.get(key).doc == {"id": 1, "v": []}
    t.sow_delete_by_keys([key])
    assert t.get(key) is None


def test_indexed_topics_keep_records_current(any_store: Any, clock: FakeClock) -> None:
    t = any_store.create_topic("t", keys=["/id"], indexes=["/px"], expiration="enabled")
    keys = [r.sow_key for r in t.publish_many([f'{{"id": {i}, "px": {i}}}' for i in range(5)])]
    assert len(t.sow("/px >= 0")) == 5  # first content query: Records for every key
    t.publish('{"id": 0, "px": 100}')
    t.publish_many(['{"id": 1, "px": 101}'])
    t.delta_publish('{"id": 2, "px": 102}')
    t.sow_delete_by_keys([keys[3]])
    t.publish('{"id": 4, "px": 104}', expiration=5)
    clock.advance(10)
    assert sorted(r.doc["px"] for r in t.sow("/px > 50")) == [100, 101, 102]
    assert t.get(keys[2]).doc == {"id": 2, "px": 102}
    assert t.get(keys[3]) is None
    assert t.get(keys[4]) is None
    t.compact()
    assert sorted(r.doc["px"] for r in t.sow()) == [100, 101, 102]


def test_records_after_reopen_are_read_from_the_file(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        key = t.publish_many(['{"id": 1, "v": "a"}', '{"id": 2}'])[0].sow_key
        before = t.get(key)
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        assert t.get(key) == before
        rec = t.get(key)
        assert rec is not None
        assert rec.doc == {"id": 1, "v": "a"}
        assert [r.doc for r in t.sow("/id = 1")] == [{"id": 1, "v": "a"}]


@settings(max_examples=30, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["pub", "many", "del", "get", "query", "compact"]),
            st.integers(0, 4),
            st.integers(0, 9),
        ),
        max_size=30,
    )
)
def test_every_read_equals_a_model(ops: list[tuple[str, int, int]]) -> None:
    with SowStore() as store:
        t = store.create_topic("t", keys=["/id"])
        model: dict[int, dict[str, int]] = {}
        keys = {i: t.key_for({"id": i}) for i in range(5)}
        for op, i, v in ops:
            if op == "pub":
                t.publish(json.dumps({"id": i, "v": v}))
                model[i] = {"id": i, "v": v}
            elif op == "many":
                t.publish_many([json.dumps({"id": i, "v": v}), json.dumps({"id": (i + 1) % 5})])
                model[i] = {"id": i, "v": v}
                model[(i + 1) % 5] = {"id": (i + 1) % 5}
            elif op == "del":
                t.sow_delete_by_keys([keys[i]])
                model.pop(i, None)
            elif op == "query":
                assert sorted(r.doc["id"] for r in t.sow("/id >= 0")) == sorted(model)
            elif op == "compact":
                t.compact()
            rec = t.get(keys[i])
            assert (rec.doc if rec else None) == model.get(i)
        assert {r.doc["id"]: r.doc for r in t.sow()} == model


def test_concurrent_readers_never_see_a_stale_record_after_writes_stop(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        keys = [t.key_for({"id": i}) for i in range(20)]
        t.publish_many([json.dumps({"id": i, "v": 0}) for i in range(20)])
        stop = threading.Event()
        errors: list[BaseException] = []

        def reader() -> None:
            try:
                while not stop.is_set():
                    for k in keys:
                        rec = t.get(k)
                        assert rec is not None
                        assert rec.doc["id"] == keys.index(k)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for th in threads:
            th.start()
        for v in range(1, 200):
            t.publish_many([json.dumps({"id": i, "v": v}) for i in range(20)])
        stop.set()
        for th in threads:
            th.join()
        assert errors == []
        assert {r.doc["v"] for k in keys if (r := t.get(k)) is not None} == {199}
        assert all(t.get(k) is not None for k in keys)


def test_records_read_before_the_first_query_are_found_by_it(tmp_path: Path) -> None:
    # get() caches Records of an unindexed topic, whether its keys were just
    # published or are bare offsets from a reopen; the first query indexes them all
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/v"]])
        keys = [r.sow_key for r in t.publish_many([{"id": i, "v": i % 3} for i in range(9)])]
    with SowStore(tmp_path) as store:
        t = store.topic("t")
        fresh = t.publish('{"id": 100, "v": 1}').sow_key
        for key in (keys[1], keys[4], fresh):
            assert t.get(key) is not None
        assert sorted(r.doc["id"] for r in t.sow("/v = 1")) == [1, 4, 7, 100]
    with SowStore() as memory:
        t = memory.create_topic("t", keys=["/id"], hash_indexes=[["/v"]])
        keys = [r.sow_key for r in t.publish_many([{"id": i, "v": i % 3} for i in range(9)])]
        assert t.get(keys[4]) is not None
        assert sorted(r.doc["id"] for r in t.sow("/v = 1")) == [1, 4, 7]


@settings(max_examples=30, deadline=None)
@given(
    ids=st.lists(st.integers(0, 30), max_size=25),
    top=st.integers(0, 30),
    select=st.sampled_from([None, "[-/,+/id]"]),
)
def test_a_peek_at_the_first_records_reads_only_those(
    tmp_path_factory: pytest.TempPathFactory, ids: list[int], top: int, select: str | None
) -> None:
    path = tmp_path_factory.mktemp("peek")
    with SowStore(path) as store:
        store.create_topic("t", keys=["/id"]).publish_many([{"id": i, "v": -i} for i in ids])
    with SowStore(path, readonly=True) as store:
        t = store.topic("t")
        peek = t.sow(top_n=top, select=select)
        assert t.stats()["cache_records"] <= top  # nothing read beyond the records returned
        t.sow("/v <= 0")  # now indexed: the general path gives the same page
        again = t.sow(top_n=top, select=select)
        assert [(r.sow_key, r.doc, r.seq) for r in peek] == [
            (r.sow_key, r.doc, r.seq) for r in again
        ]
        assert len(peek) == min(top, len(set(ids)))
