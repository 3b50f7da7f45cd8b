"""Benchmarks of the filter language and of queries, against sqlite3 over json_extract."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from cases import PREDICATE, PREDICATE_SQL, clause_filter, price_ranges, symbol_values
from peers import SqlitePeer
from workload import orders, render

import sowlib.expr
from sowlib.expr import compile_filter

#: Live records in the query benchmarks.
RECORDS = 20_000
SYMBOLS = 200


@pytest.fixture(scope="module")
def docs() -> tuple[dict[str, Any], ...]:
    """Parsed documents for evaluation benchmarks."""
    return orders(RECORDS)


@pytest.fixture
def indexed(new_topic: Any) -> Any:
    """A topic of 20,000 orders (200 symbols) with a hash index and a memo index, warmed."""
    topic = new_topic(hash_indexes=[["/symbol"]], indexes=["/price"])
    topic.publish_many(render("json", RECORDS, symbols=SYMBOLS, unique=True))
    topic.sow("/symbol = 'warm-up'")
    return topic


@pytest.fixture
def sqlite(fresh_dir: Callable[[], str]) -> Any:
    """The same orders in sqlite3 with expression indexes on symbol and price."""
    peer = SqlitePeer(fresh_dir() + ".sqlite", expression_indexes=["/symbol", "/price"])
    peer.publish_many(render("json", RECORDS, symbols=SYMBOLS, unique=True))
    peer.conn.execute("ANALYZE")
    yield peer
    peer.close()


@pytest.mark.benchmark(group="filter-compile")
def test_compile_20_clauses_uncached(benchmark: Any) -> None:
    text = clause_filter(20)

    def compile_fresh() -> Any:
        sowlib.expr.clear_cache()
        return compile_filter(text)

    assert benchmark(compile_fresh).to_text()


@pytest.mark.benchmark(group="filter-compile")
def test_compile_20_clauses_cached(benchmark: Any) -> None:
    text = clause_filter(20)
    first = compile_filter(text)
    assert benchmark(compile_filter, text) is first


@pytest.mark.benchmark(group="filter-eval")
def test_eval_predicate_on_parsed_docs(benchmark: Any, docs: Any) -> None:
    match = compile_filter(PREDICATE).matcher
    hits = benchmark(lambda: sum(1 for d in docs if match(d, None)))
    assert 0 < hits < len(docs)


@pytest.mark.benchmark(group="scan")
def test_full_scan_sowlib(benchmark: Any, new_topic: Any) -> None:
    topic = new_topic()
    topic.publish_many(render("json", RECORDS, symbols=SYMBOLS, unique=True))
    topic.sow("/symbol = 'warm-up'")
    assert benchmark(topic.sow, PREDICATE)


@pytest.mark.benchmark(group="scan")
def test_full_scan_sqlite(benchmark: Any, fresh_dir: Callable[[], str]) -> None:
    peer = SqlitePeer(fresh_dir() + ".sqlite")
    peer.publish_many(render("json", RECORDS, symbols=SYMBOLS, unique=True))
    assert benchmark(peer.query, PREDICATE_SQL)
    peer.close()


@pytest.mark.benchmark(group="equality")
def test_hash_index_equality_sowlib(benchmark: Any, indexed: Any) -> None:
    filters = [f"/symbol = '{s}'" for s in symbol_values(SYMBOLS, 50)]
    assert benchmark(lambda: sum(len(indexed.sow(f)) for f in filters)) > 0


@pytest.mark.benchmark(group="equality")
def test_expression_index_equality_sqlite(benchmark: Any, sqlite: Any) -> None:
    where = "json_extract(doc, '$.symbol') = ?"
    syms = symbol_values(SYMBOLS, 50)
    assert benchmark(lambda: sum(len(sqlite.query(where, (s,))) for s in syms)) > 0


@pytest.mark.benchmark(group="range")
def test_memo_index_range_sowlib(benchmark: Any, indexed: Any) -> None:
    filters = [f"/price BETWEEN {lo} AND {hi}" for lo, hi in price_ranges(50)]
    assert benchmark(lambda: sum(len(indexed.sow(f)) for f in filters)) > 0


@pytest.mark.benchmark(group="range")
def test_expression_index_range_sqlite(benchmark: Any, sqlite: Any) -> None:
    where = "json_extract(doc, '$.price') BETWEEN ? AND ?"
    ranges = price_ranges(50)
    assert benchmark(lambda: sum(len(sqlite.query(where, r)) for r in ranges)) > 0


@pytest.mark.benchmark(group="top-n")
@pytest.mark.parametrize("top_n", [10, None], ids=["top10", "full-sort"])
def test_order_by_indexed_field(benchmark: Any, indexed: Any, top_n: int | None) -> None:
    result = benchmark(indexed.sow, order_by="/price DESC", top_n=top_n)
    assert len(result) == (top_n or RECORDS)
    prices = [r.doc["price"] for r in result]
    assert prices == sorted(prices, reverse=True)


@pytest.mark.benchmark(group="publish-indexed")
def test_publish_with_indexes_sowlib(benchmark: Any, messages: Any, new_topic: Any) -> None:
    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        topic = new_topic(hash_indexes=[["/symbol"]], indexes=["/price"])
        topic.sow("/symbol = 'warm-up'")  # indexes are maintained from the first query on
        return (topic,), {}

    assert benchmark.pedantic(lambda t: t.publish_many(messages), setup=setup, rounds=3)


@pytest.mark.benchmark(group="publish-indexed")
def test_publish_with_indexes_sqlite(
    benchmark: Any, messages: Any, fresh_dir: Callable[[], str]
) -> None:
    opened: list[SqlitePeer] = []

    def setup() -> tuple[tuple[SqlitePeer], dict[str, Any]]:
        path = os.path.join(fresh_dir() + ".sqlite")
        opened.append(SqlitePeer(path, expression_indexes=["/symbol", "/price"]))
        return (opened[-1],), {}

    benchmark.pedantic(lambda p: p.publish_many(messages), setup=setup, rounds=3)
    assert opened[-1].count() > 0
    for peer in opened:
        peer.close()
