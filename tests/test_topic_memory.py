"""Bounded memory: the record cache, indexes saved with the checkpoint, streaming scans.

Each property drives a topic and a plain dict (or a second topic) side by side:
the cache never holds more than its budget and changes no result; indexes loaded
from a checkpoint, rebuilt after a crash or after a damaged index blob equal
indexes rebuilt from scratch (``Topic.check`` compares them); queries that walk
the records agree with the filter applied to the model.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import msgpack
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore, compile_filter
from sowlib.config import TopicConfig
from sowlib.errors import ArgumentError, CorruptRecordError, UnsupportedOperationError
from sowlib.keys import ContentKeyGenerator
from sowlib.storage import AppendLog, read_header
from sowlib.storage.checkpoint import decode_checkpoint, encode_checkpoint
from sowlib.topic import Topic
from sowlib.topic.parts import int_key_format

IDS = st.integers(0, 9)
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "05", ""]), st.none())
FILTERS = [
    "/g = 'a'",
    "/g IN ('a', 'b')",
    "/v > 0",
    "/v BETWEEN -1 AND 1",
    "/w = 2",
    "/w IS NULL",
    "/v >= 0 AND /w < 3",
    "/id = 5",
    "/id IN (1, 2, 3)",
    "1=1",
]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), IDS, VALUES, VALUES, VALUES),
        st.tuples(st.just("delta"), IDS, VALUES),
        st.tuples(st.just("delete"), IDS),
        st.tuples(st.just("get"), IDS),
        st.tuples(st.just("query"), st.sampled_from(FILTERS)),
    ),
    max_size=25,
)


def _indexed(store: SowStore) -> Any:
    return store.create_topic("t", keys=["/id"], hash_indexes=[["/g"]], indexes=["/v"])


def _apply(topic: Any, model: dict[int, dict[str, Any]], op: tuple[Any, ...]) -> Any:
    """Run one operation on ``topic`` and ``model``; returns what the topic answered."""
    kind = op[0]
    if kind == "publish":
        _, i, g, v, w = op
        doc = {"id": i, "g": g, "v": v, "w": w}
        model[i] = doc
        return topic.publish(doc).inserted
    if kind == "delta":
        _, i, v = op
        model[i] = {**model.get(i, {}), "id": i, "v": v}
        return topic.delta_publish({"id": i, "v": v}).inserted
    if kind == "delete":
        model.pop(op[1], None)
        return int(topic.sow_delete_by_data({"id": op[1]}))
    if kind == "get":
        rec = topic.lookup(op[1])
        assert (rec.doc if rec is not None else None) == model.get(op[1])
        return None if rec is None else (rec.sow_key, rec.data, rec.seq)
    got = sorted((r.sow_key, r.data) for r in topic.sow(op[1]))
    flt = compile_filter(op[1])
    assert sorted(r.doc["id"] for r in topic.sow(op[1])) == sorted(
        i for i, doc in model.items() if flt.matches(doc)
    )
    return got


@settings(max_examples=60, deadline=None)
@given(ops=OPS, budget=st.integers(0, 4000))
def test_the_record_cache_stays_within_its_budget_and_changes_no_result(
    ops: list[tuple[Any, ...]], budget: int
) -> None:
    with SowStore(cache_bytes=budget) as cached, SowStore(cache_bytes=0) as plain:
        a, b = _indexed(cached), _indexed(plain)
        model_a: dict[int, dict[str, Any]] = {}
        model_b: dict[int, dict[str, Any]] = {}
        for op in ops:
            assert _apply(a, model_a, op) == _apply(b, model_b, op)
            stats = a.stats()
            assert stats["cache_used_bytes"] <= budget
            assert b.stats()["cache_records"] == 0
        a.check()
        b.check()


def _damage_index_blob(path: str) -> None:
    """Rewrite the checkpoint (valid outer checksum) around a damaged index section."""
    ckpt = decode_checkpoint(Path(path + ".ckpt").read_bytes())
    assert ckpt is not None
    tag, keymap, indexes, *kept_values = msgpack.unpackb(ckpt.blob)
    broken = bytearray(indexes)
    broken[len(broken) // 2] ^= 0xFF
    blob = msgpack.packb([tag, keymap, bytes(broken), *kept_values])
    Path(path + ".ckpt").write_bytes(encode_checkpoint(attrs.evolve(ckpt, blob=blob)))


@pytest.mark.parametrize("ending", ["clean", "crash", "torn_checkpoint", "damaged_index_blob"])
@settings(max_examples=25, deadline=None)
@given(ops=OPS)
def test_indexes_after_a_reopen_equal_indexes_rebuilt_from_scratch(
    ending: str, ops: list[tuple[Any, ...]]
) -> None:
    directory = tempfile.mkdtemp()
    try:
        model: dict[int, dict[str, Any]] = {}
        with SowStore(directory) as store:
            topic = _indexed(store)
            topic.sow("/w = 1")  # an on-demand memo index, saved too
            for op in ops:
                _apply(topic, model, op)
            path = topic.stats()["path"]
            if ending == "crash":
                # What a killed writer leaves: the log, no checkpoint.
                shutil.copyfile(path, path + ".image")
        if ending == "crash":
            os.replace(path + ".image", path)
            os.unlink(path + ".ckpt")
        elif ending == "torn_checkpoint":
            data = Path(path + ".ckpt").read_bytes()
            Path(path + ".ckpt").write_bytes(data[: len(data) // 2])
        elif ending == "damaged_index_blob":
            _damage_index_blob(path)
        with SowStore(directory, readonly=True) as reader:
            reader.topic("t").check()
            for flt in FILTERS:
                _apply(reader.topic("t"), dict(model), ("query", flt))
        with SowStore(directory) as store:
            topic = store.topic("t")
            topic.check()  # the indexes equal indexes rebuilt from the records
            assert topic.explain("/g = 'a'").kind == "hash"
            for flt in FILTERS:
                _apply(topic, model, ("query", flt))
            _apply(topic, model, ("publish", 3, "a", 1, 2))
            topic.check()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_rebuild_after_a_damaged_index_section_checks_the_records_it_reads(
    tmp_path: Path,
) -> None:
    # The key map loads from the checkpoint but the indexes do not: the walk from the
    # first record that rebuilds them checks the records the checkpoint vouched for, so
    # a flipped payload is found, never filed in an index.
    with SowStore(tmp_path) as store:
        topic = _indexed(store)
        for i in range(20):
            topic.publish({"id": i, "g": "abcdefgh", "v": i})
        path = topic.path
    _damage_index_blob(path)
    data = bytearray(Path(path).read_bytes())
    at = data.find(b"abcdefgh")
    data[at] ^= 0x01  # 'a' -> '`' inside the first record's payload, before the committed end
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError), SowStore(tmp_path) as store:
        store.topic("t")


DOCS = st.fixed_dictionaries(
    {"id": IDS},
    optional={"a": VALUES, "b": VALUES, "n": st.fixed_dictionaries({"x": VALUES})},
)
SCANS = st.sampled_from(
    [
        "/a = 1",
        "/a > 0 AND /b = 'a'",
        "/n/x IS NOT NULL",
        "/a + 1 > 1 OR /b LIKE '^0'",
        "NOT (/a = 0)",
        "/b IN ('a', '05') OR /a < 0",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(DOCS, max_size=30),
    flt=SCANS,
    top=st.none() | st.integers(0, 5),
    order=st.none() | st.sampled_from(["/a", "/b DESC", "/id"]),
)
def test_streaming_scans_agree_with_the_model(
    docs: list[dict[str, Any]], flt: str, top: int | None, order: str | None
) -> None:
    with SowStore(cache_bytes=0) as store:
        topic = store.create_topic("t", keys=["/id"])
        model: dict[int, dict[str, Any]] = {}
        for doc in docs:
            model[doc["id"]] = doc
        topic.publish_many([json.dumps(d) for d in docs])
        compiled = compile_filter(flt)
        expected = {i for i, d in model.items() if compiled.matches(d)}
        got = topic.sow(flt, order_by=order, top_n=top)
        ids = [r.doc["id"] for r in got]
        assert len(ids) == len(set(ids))
        assert set(ids) <= expected
        assert len(ids) == (len(expected) if top is None else min(top, len(expected)))
        assert topic.stats()["cache_records"] == 0  # nothing kept


def test_lookup_hashes_key_values_as_publish_does() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/orderId"])
        positions = store.create_topic("positions", keys=["/book", "/sym"])
        orders.publish({"orderId": 1042, "px": 1})
        positions.publish({"book": "BOOK1", "sym": "MSFT", "qty": 5})
        assert orders.lookup(1042) == orders.get(orders.key_for({"orderId": 1042}))
        assert orders.lookup("1042") == orders.lookup(1042)  # canonical text, as keys use
        assert orders.lookup(7) is None
        assert orders.key_for_values([1042]) == orders.key_for({"orderId": 1042})
        assert orders.lookup(None) is None
        rec = positions.lookup("BOOK1", "MSFT")
        assert rec is not None
        assert rec.doc["qty"] == 5
        assert positions.lookup_many([("BOOK1", "MSFT"), ("BOOK2", "MSFT")]) == [rec, None]
        with pytest.raises(ArgumentError):
            positions.lookup("BOOK1")
        for rows in (5, "ab", [5], [None]):
            with pytest.raises(ArgumentError):
                orders.lookup_many(rows)  # type: ignore[arg-type]  # bad input on purpose
        for values in (5, "a", b"a", {1: 2}):
            with pytest.raises(ArgumentError):
                orders.publish_many(['{"orderId": 1}'], key_values=values)  # type: ignore[arg-type]
        plain = store.create_topic("plain")
        with pytest.raises(UnsupportedOperationError):
            plain.lookup("x")


@pytest.mark.parametrize("budget", [-1, 1.5, True, "8MB"])
def test_a_bad_cache_budget_is_refused(budget: Any) -> None:
    with SowStore() as store, pytest.raises(ArgumentError):
        store.create_topic("t", keys=["/id"], cache_bytes=budget)


def test_declared_indexes_are_used_by_the_first_query_after_a_reopen(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        topic = _indexed(store)
        topic.publish_many([json.dumps({"id": i, "g": "ab"[i % 2], "v": i}) for i in range(50)])
    seen: list[tuple[int, int]] = []
    with SowStore(tmp_path, readonly=True) as reader:
        topic = reader.topic("t")
        assert topic.stats()["from_checkpoint"]
        assert topic.explain("/g = 'a'").kind == "hash"
        assert len(topic.sow("/g = 'a'")) == 25
        # the rows are read from the map and not cached: the cache holds by-key reads only
        assert topic.stats()["cache_records"] == 0
    with SowStore(tmp_path) as store:
        path = store.topic("t").stats()["path"]
    os.unlink(path + ".ckpt")  # a crash: the indexes are rebuilt, with progress reported
    config = TopicConfig.from_dict(json.loads(read_header(path).meta))
    topic = Topic(config, AppendLog(path), clock=time.time, progress=_record(seen))
    try:
        assert seen[-1] == (50, 50)
        assert len(topic.sow("/v >= 40")) == 10
        topic.check()
    finally:
        topic.close()


def _record(seen: list[tuple[int, int]]) -> Any:
    def progress(done: int, total: int) -> None:
        seen.append((done, total))

    return progress


@pytest.mark.parametrize("first", ["delete", "update", "insert", "query", "walk"])
def test_saved_index_buckets_are_unpacked_by_their_first_use_whatever_it_is(
    tmp_path: Path, first: str
) -> None:
    docs: dict[int, dict[str, Any]] = {i: {"id": i, "g": "ab"[i % 2], "v": i} for i in range(40)}
    with SowStore(tmp_path) as store:
        _indexed(store).publish_many([json.dumps(d) for d in docs.values()])
    with SowStore(tmp_path) as store:
        topic = store.topic("t")  # nothing below has read a bucket yet
        if first == "delete":
            topic.sow_delete_by_data({"id": 2})
            del docs[2]
        elif first == "update":
            topic.publish({"id": 4, "g": "b", "v": 5})
            docs[4] = {"id": 4, "g": "b", "v": 5}
        elif first == "insert":
            topic.publish({"id": 99, "g": "a", "v": 0})
            docs[99] = {"id": 99, "g": "a", "v": 0}
        elif first == "walk":
            top = topic.sow("/v >= 0", order_by="/v DESC", top_n=3)
            assert [r.doc["v"] for r in top] == [39, 38, 37]
        for g in "ab":
            expected = sorted(i for i, d in docs.items() if d["g"] == g)
            assert sorted(r.doc["id"] for r in topic.sow(f"/g = '{g}'")) == expected
        for lo in (0, 10, 35):
            expected = sorted(i for i, d in docs.items() if d["v"] >= lo)
            assert sorted(r.doc["id"] for r in topic.sow(f"/v >= {lo}")) == expected
        topic.check()


@pytest.mark.parametrize("domain", ["orders", "100%", "%d%s", "ünï"])
def test_the_int_key_format_hashes_as_the_content_key_generator(domain: str) -> None:
    content = ContentKeyGenerator(["/orderId"], domain=domain, topic="orders")
    fmt = int_key_format(content)
    assert fmt is not None
    for value in (0, 7, -3, 1042, 2**63, -(2**70), 10**30):
        assert [xxhash.xxh64_intdigest(fmt % value)] == content.hashes_of_values([value])
    assert int_key_format(ContentKeyGenerator(["/a", "/b"], domain="x", topic="x")) is None
    assert int_key_format(None) is None


def test_lookup_by_int_checks_the_record_and_ignores_bools(tmp_path: Path) -> None:
    with SowStore(tmp_path / "store") as store:
        orders = store.create_topic("orders", keys=["/id"], cache_bytes=0)
        for i in range(5):
            orders.publish({"id": i, "v": "x" * 16})
        assert orders.lookup(1) is not None
        assert orders.lookup(True) == orders.lookup(1) == orders.get(orders.key_for({"id": 1}))
        two = orders.lookup(2)
        assert two is not None
        assert two.doc == {"id": 2, "v": "x" * 16}
        assert orders.lookup(9) is None
    log = tmp_path / "store" / next(p for p in os.listdir(tmp_path / "store") if p.endswith(".sow"))
    data = bytearray(log.read_bytes())
    at = data.index(b'{"id":2,')
    data[at + 8] ^= 0x01  # still JSON: only the checksum can tell
    log.write_bytes(bytes(data))
    with SowStore(tmp_path / "store", readonly=True, cache_bytes=0) as store:
        orders = store.topic("orders")
        assert orders.lookup(1) is not None
        with pytest.raises(CorruptRecordError):
            orders.lookup(2)


def test_a_store_reports_the_progress_of_an_index_rebuild(tmp_path: Path) -> None:
    with SowStore(tmp_path / "store") as store:
        orders = store.create_topic("orders", keys=["/id"], hash_indexes=[["/sym"]])
        orders.publish_many([{"id": i, "sym": f"S{i % 3}"} for i in range(10_000)])
    for name in os.listdir(tmp_path / "store"):
        if name.endswith(".ckpt"):
            os.unlink(tmp_path / "store" / name)  # as a crash leaves it: no checkpoint
    seen: list[tuple[int, int | None]] = []
    with SowStore(tmp_path / "store", progress=lambda done, total: seen.append((done, total))):
        pass
    assert seen
    assert seen[-1] == (10_000, 10_000)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


@pytest.mark.parametrize("batch", [False, True])
def test_a_transient_topic_of_updates_compacts_by_bytes(batch: bool) -> None:
    # The garbage ratio compares live bytes with the bytes the in-memory log holds
    # (not with its record count), so updates of a few keys do not pile up versions.
    with SowStore() as store:
        topic = store.create_topic("t", keys=["/id"])
        for rnd in range(100):
            msgs = [f'{{"id": {i}, "round": {rnd}, "pad": "{"x" * 80}"}}' for i in range(500)]
            if batch:
                topic.publish_many(msgs)
            else:
                for m in msgs:
                    topic.publish(m)
        log = topic._p.writer.log.log
        assert len(topic) == 500
        # 1 MiB of records at most before the first compaction, then at most 1/0.7 of live.
        assert log.record_count < 9_000, log.record_count
        assert [r.doc["round"] for r in topic.sow()] == [99] * 500
