"""Topics answer scans from columns once a field was scanned, and keep them up to date."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sowlib
from sowlib import compile_filter
from sowlib.paths import parse_path

FILTERS = [
    "(/price > 100 AND /side = 'B') OR /region IN ('EU','APAC')",
    "/qty BETWEEN 10 AND 60 AND NOT (/side = 'S')",
    "/region LIKE '^A' OR /note IS NULL",
    "/price >= '50' OR /flag",
]
REGIONS = ["EU", "APAC", "US", "UK", "LATAM", ""]

pytest.importorskip("numpy", reason="the column engine needs numpy")


def _order(i: int, rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "orderId": i,
        "price": rng.choice([rng.randint(1, 200), rng.random() * 200, str(rng.randint(1, 200))]),
        "qty": rng.choice([rng.randint(1, 100), None, "abc", 2**60]),
        "side": rng.choice(["B", "S", True, 1]),
        "region": rng.choice(REGIONS),
    }
    if rng.random() < 0.3:
        doc["note"] = rng.choice(["x", "", [1, 2], {"a": 1}])
    if rng.random() < 0.3:
        doc["flag"] = rng.choice([0, 1, "1", "no", None, 2.5])
    if rng.random() < 0.1:
        del doc["price"]
    return doc


def _expected(topic: sowlib.Topic, text: str) -> list[str]:
    flt = compile_filter(text)
    return sorted(r.sow_key for r in topic.sow() if flt.matches(json.loads(r.data)))


def _got(topic: sowlib.Topic, text: str) -> list[str]:
    return sorted(r.sow_key for r in topic.sow(text))


def _agree(topic: sowlib.Topic) -> None:
    for text in FILTERS:
        assert _got(topic, text) == _expected(topic, text), text


@pytest.fixture
def topic(tmp_path: Path) -> Any:
    store = sowlib.SowStore(str(tmp_path / "s"))
    t = store.create_topic("orders", keys=["/orderId"], indexes=["/price"])
    rng = random.Random(5)
    t.publish_many([json.dumps(_order(i, rng)) for i in range(300)])
    yield t
    store.close()


def test_second_scan_of_a_field_uses_its_columns(topic: sowlib.Topic) -> None:
    text = FILTERS[0]
    assert topic.explain(text).kind == "scan"
    first = _got(topic, text)
    plan = topic.explain(text)
    assert plan.kind == "columns"
    assert "/region" in plan.describe()
    assert _got(topic, text) == first == _expected(topic, text)


def test_columns_exist_only_for_fields_filters_scanned(topic: sowlib.Topic) -> None:
    for _ in range(2):
        topic.sow("/side = 'B' OR /qty > 5")
    plan = topic.explain("/side = 'B' OR /qty > 5")
    assert plan.kind == "columns"
    assert plan.index == "columns(/qty,/side)"
    assert "/region" not in plan.index


def test_columns_follow_every_kind_of_write(tmp_path: Path) -> None:
    now = [1000.0]
    store = sowlib.SowStore(str(tmp_path / "s"), clock=lambda: now[0])
    t = store.create_topic("orders", keys=["/orderId"], hash_indexes=[["/side"]])
    rng = random.Random(7)
    t.publish_many([json.dumps(_order(i, rng)) for i in range(200)])
    for _ in range(2):
        _agree(t)  # the second round runs over columns
    # a narrow memo probe (/qty BETWEEN on 200 records) still beats the columns
    assert [t.explain(text).kind for text in FILTERS] == ["columns", "memo", "columns", "columns"]
    # single publishes: inserts and updates that change the values
    for i in range(150, 260):
        t.publish(json.dumps(_order(i, rng)))
    _agree(t)
    # batches with repeated keys (updates inside one batch)
    t.publish_many([json.dumps(_order(rng.randrange(300), rng)) for _ in range(200)])
    _agree(t)
    # deletes by key, by filter (the delete itself planned over columns), by data
    t.sow_delete_by_keys([r.sow_key for r in list(t.sow())[:10]])
    t.sow_delete("/region = 'UK' OR /price > 180")
    t.sow_delete_by_data(json.dumps({"orderId": 3}))
    _agree(t)
    # expirations
    t.publish_many([json.dumps(_order(i, rng)) for i in range(400, 450)], expiration=5)
    _agree(t)
    now[0] += 10
    store.process_expirations()
    _agree(t)
    # compaction keeps the keys, and the columns stay valid
    t.compact()
    _agree(t)
    assert t.explain(FILTERS[0]).kind == "columns"
    t.check()
    store.close()


def test_a_reader_follows_the_writer_and_reopens(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    writer = sowlib.SowStore(path)
    w = writer.create_topic("orders", keys=["/orderId"])
    rng = random.Random(9)
    w.publish_many([json.dumps(_order(i, rng)) for i in range(100)])
    writer.flush()
    reader = sowlib.SowStore(path, readonly=True)
    r = reader.topic("orders")
    for _ in range(2):
        _agree(r)
    for i in range(50, 150):
        w.publish(json.dumps(_order(i, rng)))
    w.sow_delete("/side = 'S'")
    writer.flush()
    r.refresh()
    _agree(r)
    for _ in range(2):
        _agree(r)  # the columns follow the refresh
    w.compact()
    writer.flush()
    r.refresh()  # the file was replaced: the handle continues on the new file
    reader.refresh()
    assert reader.topic("orders") is r
    assert len(r) == len(w)
    for _ in range(2):
        _agree(r)
    assert r.explain(FILTERS[0]).kind == "columns"
    r.check()
    reader.close()
    writer.close()
    again = sowlib.SowStore(path)
    t = again.topic("orders")
    for _ in range(2):
        _agree(t)
    again.close()


def test_explain_names_the_column_plan(topic: sowlib.Topic) -> None:
    text = "/qty > 10 OR /side = 'B'"
    topic.sow(text)
    assert "columns built now" in topic.explain(text).describe()
    topic.sow(text)
    described = topic.explain(text).describe()
    assert described.startswith("columns columns(/qty,/side)")
    assert "built now" not in described


def test_a_filter_without_a_program_keeps_scanning(topic: sowlib.Topic) -> None:
    text = "/price > /qty"
    for _ in range(3):
        assert _got(topic, text) == _expected(topic, text)
    assert topic.explain(text).kind == "scan"


ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 40), st.integers(0, 10**6)),
        st.tuples(st.just("delete"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("query"), st.integers(0, len(FILTERS) - 1), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops)
def test_any_sequence_of_writes_and_queries_agrees_with_a_scan(
    steps: list[tuple[str, int, int]],
) -> None:
    store = sowlib.SowStore()
    t = store.create_topic("orders", keys=["/orderId"])
    for text in FILTERS:
        t.sow(text)  # every field scanned once: the next queries use columns
    for op, n, seed in steps:
        if op == "put":
            t.publish(json.dumps(_order(n, random.Random(seed))))
        elif op == "delete":
            t.sow_delete_by_data(json.dumps({"orderId": n}))
        else:
            assert _got(t, FILTERS[n]) == _expected(t, FILTERS[n])
    _agree(t)
    t.check()
    store.close()


def test_keeping_columns_reads_no_replaced_record(monkeypatch: pytest.MonkeyPatch) -> None:
    from sowlib.topic.views import Views

    store = sowlib.SowStore()
    t = store.create_topic("orders", keys=["/orderId"])  # no hash or memo index
    rng = random.Random(3)
    t.publish_many([json.dumps(_order(i, rng)) for i in range(100)])
    ors = [FILTERS[0], FILTERS[2]]  # no AND on top: no memo index is built for them
    for _ in range(2):
        for text in ors:
            assert _got(t, text) == _expected(t, text)
    assert t.explain(ors[0]).kind == "columns"
    assert t.stats()["indexes"] == []
    reads: list[object] = []
    real = Views.doc

    def counted(self: Views, key: Any) -> Any:
        reads.append(key)
        return real(self, key)

    monkeypatch.setattr(Views, "doc", counted)
    t.publish(json.dumps(_order(5, rng)))  # an update
    t.publish_many([json.dumps(_order(i, rng)) for i in range(10, 40)])  # updates
    t.sow_delete_by_data(json.dumps({"orderId": 7}))
    assert reads == []
    monkeypatch.undo()
    for text in ors:
        assert _got(t, text) == _expected(t, text)
    assert t._p.indexes.live == len(t)
    t.check()
    store.close()


def test_check_finds_a_column_that_disagrees_with_the_records(topic: sowlib.Topic) -> None:
    from sowlib.columns.store import ColumnStore

    for _ in range(2):
        topic.sow(FILTERS[0])
    topic.check()
    store = topic._p.indexes.listener
    assert isinstance(store, ColumnStore)
    key = next(iter(topic._p.keys.keys()))
    store.put(key, ["wrong"] * len(store.paths))
    with pytest.raises(AssertionError):
        topic.check()


@pytest.mark.parametrize("reopen_writer", [False, True])
def test_an_indexed_reader_keeps_columns_through_refreshes(
    tmp_path: Path, reopen_writer: bool
) -> None:
    # A reader opened from a checkpoint holds no kept index values until its first
    # refresh; its columns are read from the records, then follow the refreshes.
    path = str(tmp_path / "s")
    writer = sowlib.SowStore(path)
    w = writer.create_topic(
        "orders", keys=["/orderId"], indexes=["/price"], hash_indexes=[["/side"]]
    )
    rng = random.Random(11)
    w.publish_many([json.dumps(_order(i, rng)) for i in range(150)])
    if reopen_writer:
        writer.close()  # a checkpoint with the kept values
        writer = sowlib.SowStore(path)
        w = writer.topic("orders")
    writer.flush()
    reader = sowlib.SowStore(path, readonly=True)
    r = reader.topic("orders")
    for _ in range(2):
        _agree(r)
    for step in range(3):
        for i in range(100 + 20 * step, 200 + 20 * step):
            w.publish(json.dumps(_order(i, rng)))
        w.publish_many([json.dumps(_order(rng.randrange(250), rng)) for _ in range(80)])
        w.sow_delete("/region = 'US'")
        writer.flush()
        assert r.refresh() > 0
        _agree(r)
        assert [r.explain(text).kind for text in (FILTERS[0], FILTERS[2])] == ["columns"] * 2
        r.check()
    reader.close()
    writer.close()


def test_columns_of_indexed_fields_come_from_the_kept_values(
    topic: sowlib.Topic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /price has a memo index: its kept values fill the column, no record is read for it
    from sowlib.topic.logview import LogView

    parts = topic._p
    reads: list[int] = []
    real = LogView.payloads

    def counted(self: LogView, offsets: Any) -> Any:
        offsets = list(offsets)
        reads.append(len(offsets))
        return real(self, offsets)

    monkeypatch.setattr(LogView, "payloads", counted)
    price, side = parse_path("/price"), parse_path("/side")
    chunks = list(parts.source.field_chunks([price]))
    assert reads == []
    assert sum(len(keys) for keys, _cols in chunks) == len(topic)
    got = {k: v for keys, (col,) in chunks for k, v in zip(keys, col, strict=True)}
    assert got == {k: price.getter(d) for k, d in parts.source.scan()}
    reads.clear()
    both = list(parts.source.field_chunks([side, price]))
    assert sum(reads) == len(topic)  # /side read out of the records once
    for keys, (sides, prices) in both:
        assert prices == [got[k] for k in keys]
        assert sides == [side.getter(parts.source.doc(k)) for k in keys]


def test_a_first_scan_runs_over_columns_of_each_batch_and_keeps_none(
    topic: sowlib.Topic,
) -> None:
    # each of these names a field no query scanned before: a scan, vectorized per batch
    for text in [FILTERS[0], FILTERS[2], FILTERS[3]]:  # no AND on top: no memo probe
        assert _got(topic, text) == _expected(topic, text), text
    assert topic._p.indexes.listener is None  # no column kept
    plan = topic.explain("/qty > 5 OR /note = 'x'")
    assert (plan.kind, plan.index) == ("scan", None)
    assert plan.describe().startswith("scan [vector: 2 leaves over /note, /qty;")
    assert "for this query only" in plan.describe()
    # a filter the vector engine leaves to the closures stays a plain scan
    assert topic.explain("/price > /qty").describe().startswith("scan all ")


def test_a_first_scan_with_top_n_stops_reading_once_it_has_its_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sowlib.topic.logview import LogView

    store = sowlib.SowStore()
    t = store.create_topic("orders", keys=["/orderId"])
    rng = random.Random(13)
    t.publish_many([json.dumps(_order(i, rng)) for i in range(10_000)])
    batches: list[int] = []
    real = LogView.payloads

    def counted(self: LogView, offsets: Any) -> Any:
        offsets = list(offsets)
        batches.append(len(offsets))
        return real(self, offsets)

    monkeypatch.setattr(LogView, "payloads", counted)
    got = t.sow(FILTERS[0], top_n=3)
    assert len(got) == 3
    assert len(batches) == 1  # the first batch held 3 matches
    assert batches[0] < 10_000
    flt = compile_filter(FILTERS[0])
    assert all(flt.matches(json.loads(r.data)) for r in got)
    store.close()
