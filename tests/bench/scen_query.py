"""Filter-language and query targets for ``report.py``.

Compile and evaluate filters, full scans, hash and memo index lookups, publish with
indexes maintained, and top_n; sqlite3 with expression indexes is the peer.
"""

from __future__ import annotations

import os
import time
from typing import Any

from cases import PREDICATE, PREDICATE_SQL, clause_filter, price_ranges, symbol_values
from peers import SqlitePeer
from rows import Row, bound, compare, info
from scen_store import BATCH, open_topic
from timing import Stats, chunks, interleaved, per_batch
from workload import Sizes, orders, render

import sowlib.expr
from sowlib.expr import compile_filter

__all__ = ["compile_rows", "eval_rows", "index_publish_rows", "query_rows"]

_F = "filter"
_Q = "queries"


def eval_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Compiled evaluation of the target predicate on already-parsed documents."""
    docs = orders(sizes.each)
    flt = compile_filter(PREDICATE)
    bare, method = flt.matcher, flt.matches
    batches = chunks(docs, BATCH)
    res = interleaved(
        {
            "matcher": (lambda b: [bare(d, None) for d in b], batches),
            "matches": (lambda b: [method(d) for d in b], batches),
        },
        BATCH,
    )
    return [
        bound(
            _F,
            f"Filter.matcher on parsed docs: {PREDICATE}",
            1e6 / res["matcher"].median_us,
            "docs/s",
            2_000_000,
            at_most=False,
            stats=res["matcher"],
        ),
        bound(
            _F,
            "Filter.matches (method call) on parsed docs",
            1e6 / res["matches"].median_us,
            "docs/s",
            None,
            at_most=False,
            stats=res["matches"],
        ),
    ]


def compile_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Compile time of a 20-clause filter, uncached (cache cleared each time) and cached."""
    texts = [clause_filter(20, variant=i) for i in range(max(sizes.samples, 50))]
    uncached = _uncached(texts * 4)
    no_like = _uncached([clause_filter(20, variant=i, like=False) for i in range(50)] * 4)
    compile_filter(texts[0])
    cached = per_batch(lambda b: [compile_filter(t) for t in b], [[texts[0]] * BATCH] * 50, BATCH)
    return [
        bound(
            _F,
            "compile 20-clause filter (3 LIKE), uncached (p50)",
            uncached.median_us / 1000,
            "ms",
            1.0,
            stats=uncached,
        ),
        bound(
            _F,
            "compile 20-clause filter without LIKE, uncached (p50)",
            no_like.median_us / 1000,
            "ms",
            None,
            stats=no_like,
        ),
        bound(
            _F, "compile 20-clause filter, cached (p50)", cached.median_us, "µs", 5.0, stats=cached
        ),
    ]


def _uncached(texts: list[str]) -> Stats:
    clear = sowlib.expr.clear_cache
    samples = []
    for text in texts:
        clear()
        t0 = time.perf_counter()
        compile_filter(text)
        samples.append(time.perf_counter() - t0)
    return per_sample(samples)


def per_sample(samples: list[float]) -> Stats:
    """Stats of single-operation samples (seconds each)."""
    ordered = sorted(samples)
    p99 = ordered[max(0, -(-99 * len(ordered) // 100) - 1)]
    return Stats(
        len(samples), sum(samples), len(samples), ordered[len(ordered) // 2] * 1e6, p99 * 1e6
    )


def _loaded(tmp: str, name: str, sizes: Sizes, symbols: int, **options: Any) -> tuple[Any, Any]:
    store, topic = open_topic(os.path.join(tmp, name), **options)
    for batch in chunks(render("json", sizes.scan, symbols=symbols, unique=True), 10 * BATCH):
        topic.publish_many(batch)
    return store, topic


def _sqlite(tmp: str, name: str, sizes: Sizes, symbols: int, indexes: list[str]) -> SqlitePeer:
    peer = SqlitePeer(os.path.join(tmp, name), expression_indexes=indexes)
    peer.publish_many(render("json", sizes.scan, symbols=symbols, unique=True))
    peer.conn.execute("ANALYZE")
    return peer


def query_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Full scan, hash-index equality, memo-index range and top_n, each vs sqlite3."""
    symbols = 200
    store, topic = _loaded(
        tmp, "query", sizes, symbols, hash_indexes=[["/symbol"]], indexes=["/price"]
    )
    plain_store, plain = _loaded(tmp, "query_plain", sizes, symbols)
    sql = _sqlite(tmp, "query.sqlite", sizes, symbols, ["/symbol", "/price"])
    plain_sql = _sqlite(tmp, "query_plain.sqlite", sizes, symbols, [])
    n = sizes.scan
    for t in (topic, plain):
        t.sow("/symbol = 'warm-up'")  # the first query decodes every record and builds indexes
    assert len(plain.sow(PREDICATE)) == len(plain_sql.query(PREDICATE_SQL))
    scans = max(5, sizes.samples // 5)
    scan = interleaved(
        {
            "sowlib": (lambda _: plain.sow(PREDICATE), [None] * scans),
            "sqlite": (lambda _: plain_sql.query(PREDICATE_SQL), [None] * scans),
        },
        1,
    )
    scan = {k: _per_record(v, n) for k, v in scan.items()}
    syms = symbol_values(symbols, sizes.samples * 4)
    # Filters are compiled once per distinct text (LRU); sqlite reuses its prepared
    # statement. Compile every text first so both sides measure the lookup, not parsing.
    for s in syms:
        compile_filter(f"/symbol = '{s}'")
    eq_sql = "json_extract(doc, '$.symbol') = ?"
    assert len(topic.sow(f"/symbol = '{syms[0]}'")) == len(sql.query(eq_sql, (syms[0],)))
    eq = interleaved(
        {
            "sowlib": (lambda s: topic.sow(f"/symbol = '{s}'"), syms),
            "sqlite": (lambda s: sql.query(eq_sql, (s,)), syms),
        },
        1,
    )
    ranges = price_ranges(sizes.samples * 4)
    for lo, hi in ranges:
        compile_filter(f"/price BETWEEN {lo} AND {hi}")
    rng_sql = "json_extract(doc, '$.price') BETWEEN ? AND ?"
    lo, hi = ranges[0]
    assert len(topic.sow(f"/price BETWEEN {lo} AND {hi}")) == len(sql.query(rng_sql, (lo, hi)))
    rng = interleaved(
        {
            "sowlib": (lambda r: topic.sow(f"/price BETWEEN {r[0]} AND {r[1]}"), ranges),
            "sqlite": (lambda r: sql.query(rng_sql, r), ranges),
        },
        1,
    )
    order = "json_extract(doc, '$.price') DESC"
    top = interleaved(
        {
            "top": (lambda _: topic.sow(order_by="/price DESC", top_n=10), [0] * 20),
            "full": (lambda _: topic.sow(order_by="/price DESC"), [0] * 20),
            "sqlite": (lambda _: sql.query("1", tail=f"ORDER BY {order} LIMIT 10"), [0] * 20),
        },
        1,
    )
    for s in (store, plain_store):
        s.close()
    for p in (sql, plain_sql):
        p.close()
    return [
        compare(
            _Q,
            f"full-scan sow(filter), {n:,} records",
            scan["sowlib"],
            "sqlite3 json_extract scan",
            scan["sqlite"],
            1.0,
            unit="records/s",
        ),
        compare(
            _Q,
            "equality /symbol = 'X' via hash index (200 symbols)",
            eq["sowlib"],
            "sqlite3 expression index",
            eq["sqlite"],
            2.0,
            unit="queries/s",
        ),
        compare(
            _Q,
            "range /price BETWEEN a AND b (~1%) via memo index",
            rng["sowlib"],
            "sqlite3 expression index",
            rng["sqlite"],
            1.5,
            unit="queries/s",
        ),
        compare(
            _Q,
            "top_n=10 order_by /price DESC (indexed)",
            top["top"],
            "sowlib full sort, no top_n",
            top["full"],
            None,
            unit="queries/s",
        ),
        compare(
            _Q,
            "top_n=10 order_by /price DESC (indexed)",
            top["top"],
            "sqlite3 ORDER BY LIMIT 10 (indexed)",
            top["sqlite"],
            None,
            unit="queries/s",
        ),
    ]


def _per_record(stats: Stats, records: int) -> Stats:
    """Re-express whole-scan stats per record scanned."""
    return Stats(
        stats.ops * records,
        stats.total_s,
        stats.samples,
        stats.median_us / records,
        stats.p99_us / records,
    )


def index_publish_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """publish_many with a hash and a memo index maintained vs sqlite3 with two expression
    indexes, and a plain publish_many for the cost of index upkeep."""
    batches = chunks(render("json", sizes.messages, symbols=200), BATCH)
    store, topic = open_topic(
        os.path.join(tmp, "idx_pub"), hash_indexes=[["/symbol"]], indexes=["/price"]
    )
    topic.sow("/symbol = 'warm-up'")  # indexes are built on first query, then maintained
    plain_store, plain = open_topic(os.path.join(tmp, "idx_pub_plain"))
    sql = SqlitePeer(os.path.join(tmp, "idx_pub.sqlite"), expression_indexes=["/symbol", "/price"])
    res = interleaved(
        {
            "sowlib": (topic.publish_many, batches),
            "plain": (plain.publish_many, batches),
            "sqlite": (sql.publish_many, batches),
        },
        BATCH,
    )
    assert topic.stats()["indexes"], "the topic reports its indexes"
    assert len(topic.sow("/symbol = 'SYM001'")) == len(
        sql.query("json_extract(doc, '$.symbol') = ?", ("SYM001",))
    )
    store.close()
    plain_store.close()
    sql.close()
    return [
        compare(
            _Q,
            "publish_many, hash + memo index maintained",
            res["sowlib"],
            "sqlite3, two expression indexes",
            res["sqlite"],
            1.5,
        ),
        info(_Q, "publish_many, same topic without indexes", res["plain"]),
    ]
