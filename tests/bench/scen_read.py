"""Read targets for ``report.py``: reads by key and queries on one set of distinct records.

sowlib holds ``sizes.records`` distinct orders in a topic with a hash index on /symbol
and a memo index on /price; sqlite3 holds them with the same two expression indexes
(then ``ANALYZE``), lmdb by orderId, DuckDB with the document as VARCHAR and, in one of
its two tables, the filtered fields as typed columns. Every row returned is read:
``rec.data`` for sowlib, ``fetchall()`` of the document column for sqlite3 and DuckDB,
the value bytes for lmdb.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from cases import SCAN_FILTER, SCAN_SQL, price_ranges, symbol_values
from peers import DuckdbPeer, LmdbPeer, SqlitePeer
from rows import Row, compare
from scen_store import BATCH
from scen_write import INDEXES
from timing import Stats, chunks, interleaved
from workload import SEED, Sizes, json_orders

from sowlib import SowStore
from sowlib.expr import compile_filter

__all__ = ["DUCKDB_COLUMNS", "read_messages", "read_rows"]

#: The fields a DuckDB user would extract at load time to filter on.
DUCKDB_COLUMNS = (
    ("symbol", "VARCHAR"),
    ("price", "DOUBLE"),
    ("qty", "BIGINT"),
    ("side", "VARCHAR"),
    ("region", "VARCHAR"),
)
_K = "by key"
_Q = "queries"
_EQ_SQL = "json_extract(doc, '$.symbol') = ?"
_RANGE_SQL = "json_extract(doc, '$.price') BETWEEN ? AND ?"
_TOP_SQL = "ORDER BY json_extract(doc, '$.price') DESC LIMIT 10"


def read_messages(sizes: Sizes) -> tuple[bytes, ...]:
    """The read data: distinct orderIds 0..records-1, about 100 records per symbol."""
    return json_orders(sizes.records, symbols=sizes.symbols, seed=SEED + 30)


def _prices(docs: Iterable[bytes | str]) -> list[float]:
    """The prices of ``docs`` in order (records of equal price may come in any order)."""
    return [orjson.loads(d)["price"] for d in docs]


def _single(seconds: float) -> Stats:
    return Stats(1, seconds, 1, seconds * 1e6, seconds * 1e6)


def read_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Lookups and gets vs lmdb; equality, range, top_n and a 40% scan vs sqlite3/DuckDB."""
    msgs = read_messages(sizes)
    directory = os.path.join(tmp, "reads")
    store = SowStore(directory)
    topic = store.create_topic("orders", keys=["/orderId"], **INDEXES)
    sql = SqlitePeer(os.path.join(tmp, "reads.sqlite"), expression_indexes=["/symbol", "/price"])
    lmdb = LmdbPeer(os.path.join(tmp, "reads.lmdb"))
    duck = DuckdbPeer(os.path.join(tmp, "reads.duckdb"), DUCKDB_COLUMNS)
    duck_json = DuckdbPeer(os.path.join(tmp, "reads_json.duckdb"))
    for batch in chunks(msgs, 10 * BATCH):
        for publish in (topic.publish_many, sql.publish_many, lmdb.publish_many, duck.load,
                        duck_json.load):  # fmt: skip
            publish(batch)
    sql.conn.execute("ANALYZE")
    rows = _key_rows(sizes, msgs, topic, sql, lmdb)
    lmdb.close()
    store.close()
    store = SowStore(directory)
    topic = store.topic("orders")
    sql.reopen()
    duck.reopen()
    duck_json.reopen()

    def reopen_store() -> None:
        nonlocal store, topic
        store.close()
        store = SowStore(directory)
        topic = store.topic("orders")

    reopen = {"sowlib": reopen_store, "sqlite": sql.reopen}
    rows += _query_rows(sizes, lambda: topic, sql, duck, duck_json, reopen)
    store.close()
    for peer in (sql, duck, duck_json):
        peer.close()
    return rows


def _key_rows(
    sizes: Sizes, msgs: tuple[bytes, ...], topic: Any, sql: SqlitePeer, lmdb: LmdbPeer
) -> list[Row]:
    rng = random.Random(SEED + 31)
    ids = [rng.randrange(sizes.records) for _ in range(2 * sizes.samples * BATCH)]
    sow_keys = [topic.key_for(msgs[i]) for i in ids]
    lookup, get, sql_get = topic.lookup, topic.get, sql.get

    def by_lookup(keys: Any) -> None:
        for k in keys:
            lookup(k).data  # noqa: B018  (the record's bytes are read)

    def by_get(keys: Any) -> None:
        for k in keys:
            get(k).data  # noqa: B018

    def by_sql(keys: Any) -> None:
        for k in keys:
            sql_get(k)

    by_id = chunks(ids, BATCH)
    res = interleaved(
        {
            "lookup": (by_lookup, by_id),
            "get": (by_get, chunks(sow_keys, BATCH)),
            "lmdb": (lmdb.get_batch, by_id),
            "sqlite": (by_sql, by_id),
        },
        BATCH,
    )
    assert topic.lookup(ids[0]).data == lmdb.get(ids[0]) == sql.get(ids[0]).encode()
    n = f"{sizes.records:,} records"
    lmdb_op = "lmdb get (one read txn per 1000)"
    return [
        compare(_K, f"lookup(orderId), {n}", res["lookup"], lmdb_op, res["lmdb"], 1.0),
        compare(_K, f"get(sow_key), {n}", res["get"], lmdb_op, res["lmdb"], 1.0),
        compare(_K, f"lookup(orderId), {n}", res["lookup"], "sqlite3 SELECT by primary key",
                res["sqlite"], None),
    ]  # fmt: skip


def _query_rows(
    sizes: Sizes,
    topic: Callable[[], Any],
    sql: SqlitePeer,
    duck: DuckdbPeer,
    duck_json: DuckdbPeer,
    reopen: dict[str, Callable[[], None]],
) -> list[Row]:
    n = sizes.records
    syms = symbol_values(sizes.symbols, sizes.samples * 4)
    width = round(500.0 * 499.0 / n, 2)  # ~500 of n prices uniform on 1..500
    ranges = price_ranges(sizes.samples * 4, width)
    # Filters are compiled once per distinct text (LRU); sqlite reuses its prepared
    # statement. Compile every text first so both sides measure the query, not parsing.
    eq_texts = [f"/symbol = '{s}'" for s in syms]
    range_texts = [f"/price BETWEEN {lo} AND {hi}" for lo, hi in ranges]
    for text in (*eq_texts, *range_texts, SCAN_FILTER):
        compile_filter(text)

    def sow(text: str | None, **options: Any) -> list[bytes]:
        return [r.data for r in topic().sow(text, **options)]

    def top() -> list[bytes]:
        return sow(None, order_by="/price DESC", top_n=10)

    duck_where = "(qty > 6000 AND side = 'B') OR region IN ('EU', 'APAC')"
    duck_json_where = (
        "(CAST(json_extract(doc, '$.qty') AS BIGINT) > 6000"
        " AND json_extract_string(doc, '$.side') = 'B')"
        " OR json_extract_string(doc, '$.region') IN ('EU', 'APAC')"
    )
    counts = {
        "eq": (len(sow(eq_texts[0])), len(sql.query(_EQ_SQL, (syms[0],)))),
        "range": (len(sow(range_texts[0])), len(sql.query(_RANGE_SQL, ranges[0]))),
        "top": (_prices(top()), _prices(r[0] for r in sql.query("1", tail=_TOP_SQL))),
        "scan": (len(sow(SCAN_FILTER)), len(sql.query(SCAN_SQL))),
        "duck": (len(duck.query(duck_where)), len(duck_json.query(duck_json_where))),
    }
    for name, (mine, theirs) in counts.items():
        assert mine == theirs, f"{name}: the contenders disagree ({mine!r} != {theirs!r})"
    matched = counts["scan"][0]
    assert matched == counts["duck"][0]
    first = _first_queries(syms[-1], ranges[-1], sow, top, sql, reopen)
    scans = max(3, sizes.samples // 5)
    eq = interleaved(
        {"sowlib": (sow, eq_texts), "sqlite": (lambda s: sql.query(_EQ_SQL, (s,)), syms)}, 1
    )
    rng = interleaved(
        {"sowlib": (sow, range_texts), "sqlite": (lambda r: sql.query(_RANGE_SQL, r), ranges)}, 1
    )
    tops = interleaved(
        {
            "sowlib": (lambda _: top(), [0] * sizes.samples),
            "sqlite": (lambda _: sql.query("1", tail=_TOP_SQL), [0] * sizes.samples),
        },
        1,
    )
    scan = interleaved(
        {
            "sowlib": (lambda _: sow(SCAN_FILTER), [0] * scans),
            "sqlite": (lambda _: sql.query(SCAN_SQL), [0] * scans),
            "duck": (lambda _: duck.query(duck_where), [0] * scans),
            "duck_json": (lambda _: duck_json.query(duck_json_where), [0] * scans),
        },
        1,
    )
    rows_eq = n / sizes.symbols
    per = f"{matched:,} of {n:,} records ({matched / n:.0%})"
    return [
        compare(_Q, f"equality /symbol = 'X' via hash index (~{rows_eq:.0f} rows of {n:,})",
                eq["sowlib"], "sqlite3 expression index", eq["sqlite"], 3.0, unit="queries/s"),
        compare(_Q, f"range /price BETWEEN a AND b (width {width:g}, ~500 rows) via memo index",
                rng["sowlib"], "sqlite3 expression index", rng["sqlite"], 3.0, unit="queries/s"),
        compare(_Q, "top_n=10 order_by /price DESC (memo index)", tops["sowlib"],
                "sqlite3 ORDER BY .. LIMIT 10 (expression index)", tops["sqlite"], 3.0,
                unit="queries/s"),
        compare(_Q, f"{SCAN_FILTER}: {per}, no index serves it", scan["sowlib"],
                "sqlite3 json_extract scan", scan["sqlite"], 3.0, unit="queries/s"),
        compare(_Q, "the same filter", scan["sowlib"],
                "DuckDB, typed columns qty/side/region", scan["duck"], 1.0, unit="queries/s"),
        compare(_Q, "the same filter", scan["sowlib"], "DuckDB, json_extract on the VARCHAR doc",
                scan["duck_json"], None, unit="queries/s"),
        *first,
    ]  # fmt: skip


def _first_queries(
    sym: str,
    bounds: tuple[float, float],
    sow: Callable[..., list[bytes]],
    top: Callable[[], list[bytes]],
    sql: SqlitePeer,
    reopen: dict[str, Callable[[], None]],
) -> list[Row]:
    """The first query of each kind after opening the store (clean close) or database."""
    lo, hi = bounds
    kinds: dict[str, dict[str, Callable[[], object]]] = {
        "equality /symbol": {
            "sowlib": lambda: sow(f"/symbol = '{sym}'"),
            "sqlite": lambda: sql.query(_EQ_SQL, (sym,)),
        },
        "range /price": {
            "sowlib": lambda: sow(f"/price BETWEEN {lo} AND {hi}"),
            "sqlite": lambda: sql.query(_RANGE_SQL, bounds),
        },
        "top_n=10": {"sowlib": top, "sqlite": lambda: sql.query("1", tail=_TOP_SQL)},
        "40% filter": {
            "sowlib": lambda: sow(SCAN_FILTER),
            "sqlite": lambda: sql.query(SCAN_SQL),
        },
    }
    out = []
    for kind, work in kinds.items():
        took = {}
        for name, fn in work.items():
            reopen[name]()
            t0 = time.perf_counter()
            fn()
            took[name] = time.perf_counter() - t0
        out.append(
            compare(
                _Q,
                f"first query after open: {kind}",
                _single(took["sowlib"]),
                "sqlite3, first query after connect",
                _single(took["sqlite"]),
                None,
                unit="queries/s",
            )
        )
    return out
