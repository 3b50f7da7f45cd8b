"""``explain``'s candidate counts against the true number of matches, on a real topic.

The workload a user explains: 50,000 JSON orders, 500 symbols, a hash index on
/symbol and a memo index on /price. An index plan's estimate must be near the true
count (exact where the index holds the count), a byte search's must bound it, and a
scan says that every record is tested rather than guess.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore, Topic
from sowlib.expr import compile_filter
from sowlib.index.planner import COUNTS

N = 50_000


def _orders(n: int = N) -> list[dict[str, Any]]:
    rng = random.Random(27)
    return [
        {
            "orderId": i,
            "customerId": rng.randrange(2000),
            "symbol": f"S{rng.randrange(500):03d}",
            "price": round(rng.uniform(1, 500), 2),
            "qty": rng.randrange(1, 1000),
            "side": rng.choice("BS"),
            "region": f"R{rng.randrange(8)}",
            # skewed: about 300 closed orders among 50,000
            "status": "closed" if rng.random() < 0.006 else "open",
            "channel": "phone" if rng.random() < 0.006 else "web",  # the same, unindexed
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def orders() -> list[dict[str, Any]]:
    return _orders()


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory, orders: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("explain")
    with SowStore(str(path)) as store:
        topic = store.create_topic(
            "orders",
            keys=["/orderId"],
            hash_indexes=[["/symbol"]],
            indexes=["/price", "/status"],
        )
        topic.publish_many(orders)
    return path


@pytest.fixture
def topic(store_dir: Path) -> Iterator[Topic]:
    """The topic freshly opened: no field scanned yet, so the first-scan plans show."""
    with SowStore(str(store_dir), readonly=True) as store:
        yield store.topic("orders")


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    orders = _orders(10_000)
    path = tmp_path_factory.mktemp("small")
    with SowStore(str(path)) as store:
        store.create_topic("orders", keys=["/orderId"]).publish_many(orders)
    return path, orders


@pytest.fixture
def small(
    small_dir: tuple[Path, list[dict[str, Any]]],
) -> Iterator[tuple[Topic, list[dict[str, Any]]]]:
    """10,000 orders, freshly opened: a log small enough for a byte search of all of it."""
    path, orders = small_dir
    with SowStore(str(path), readonly=True) as store:
        yield store.topic("orders"), orders


def _true(orders: list[dict[str, Any]], text: str) -> int:
    flt = compile_filter(text)
    return sum(1 for doc in orders if flt.matches(doc))


def test_the_issue_case_an_unindexed_field_matching_about_300_rows_is_not_estimated_at_0(
    topic: Topic, orders: list[dict[str, Any]]
) -> None:
    text = "/channel = 'phone'"
    true = _true(orders, text)
    assert 200 < true < 400
    plan = topic.explain(text)
    assert plan.kind == "bytes"
    # the log is over 8 MB: a sample of it, scaled to the whole file
    assert true / 2 <= plan.estimated <= true * 2
    assert plan.describe().endswith(f"~{plan.estimated} candidates")


@pytest.mark.parametrize(
    "text",
    [
        "/channel = 'phone'",
        "/qty = 7",
        "/customerId = 42",
        "/region = 'R3'",
        "/side = 'B' AND /region = 'R1'",
        "/side = 'B' AND /qty = 7",
    ],
)
def test_a_byte_search_of_a_small_log_bounds_its_matches(
    small: tuple[Topic, list[dict[str, Any]]], text: str
) -> None:
    topic, orders = small
    plan = topic.explain(text)
    true = _true(orders, text)
    assert plan.kind == "bytes", plan.describe()
    # every match holds the searched bytes of each clause: never fewer candidates
    # than matches, and few more (a number whose text starts with 7, an old version)
    assert true <= plan.estimated <= 4 * true + 10, (true, plan.describe())
    got = list(plan.candidates() or ())
    assert true <= len(got) <= plan.estimated
    assert len(topic.sow(text)) == true


@pytest.mark.parametrize(
    "text",
    [
        "/price > 497",
        "/price < 3",
        "/price BETWEEN 100 AND 103",
        "/price > 100 AND /price < 103",
        "/price = 250.5",
        "/price IN (10.5, 250.5, 499.99)",
        "/price > 497 AND /qty < 500",
        "/status = 'open' AND /price < 2",
    ],
)
def test_a_memo_plan_estimates_within_a_small_factor(
    topic: Topic, orders: list[dict[str, Any]], text: str
) -> None:
    plan = topic.explain(text)
    true = _true(orders, text)
    assert plan.kind == "memo", plan.describe()
    assert plan.count == "about"
    candidates = len(set(plan.candidates() or ()))
    assert candidates >= true
    # the estimate tracks the candidates the index hands over, which bound the matches
    assert candidates / 1.5 - 2 <= plan.estimated <= candidates * 1.5 + 2, (candidates, plan)
    assert plan.describe().endswith(f"~{plan.estimated} candidates")


def test_a_memo_equality_on_a_skewed_field_counts_the_value_not_the_mean(
    topic: Topic, orders: list[dict[str, Any]]
) -> None:
    # two values, 300 and 49,700 records: the mean fan-out (25,000) would be 80 times
    # off, and would send the selective query to a scan
    plan = topic.explain("/status = 'closed'")
    assert plan.kind == "memo"
    assert plan.estimated == _true(orders, "/status = 'closed'")
    broad = topic.explain("/status = 'open'")
    assert (broad.kind, broad.count) == ("scan", "every")


@pytest.mark.parametrize("symbols", [["S042"], ["S001", "S002", "S003"], ["nope"]])
def test_a_hash_plan_counts_its_buckets(
    topic: Topic, orders: list[dict[str, Any]], symbols: list[str]
) -> None:
    text = "/symbol IN (" + ", ".join(f"'{s}'" for s in symbols) + ")"
    plan = topic.explain(text)
    true = _true(orders, text)
    assert plan.kind == "hash"
    assert plan.estimated == true
    assert plan.count == ("exact" if len(symbols) == 1 else "at_most")
    said = f"{true} candidate" if plan.count == "exact" else f"at most {true} candidate"
    assert said in plan.describe()


def test_a_hash_plan_with_a_residual_filter_counts_candidates_above_the_matches(
    topic: Topic, orders: list[dict[str, Any]]
) -> None:
    plan = topic.explain("/symbol = 'S042' AND /price > 250")
    assert plan.estimated == _true(orders, "/symbol = 'S042'")
    assert plan.estimated >= _true(orders, "/symbol = 'S042' AND /price > 250")


@pytest.mark.parametrize("text", ["/orderId = 5", "/orderId IN (1, 2, 3, 999999)"])
def test_a_key_plan_bounds_the_matches(
    topic: Topic, orders: list[dict[str, Any]], text: str
) -> None:
    plan = topic.explain(text)
    assert plan.kind == "key_fields"
    assert plan.count == "at_most"
    assert _true(orders, text) <= plan.estimated <= 4


@pytest.mark.parametrize(
    "text", ["/symbol = 'S042' OR /symbol = 'S043'", "/price > 497 OR /price < 3", "/qty > /price"]
)
def test_a_scan_says_every_record_is_tested_instead_of_guessing(topic: Topic, text: str) -> None:
    plan = topic.explain(text)
    assert plan.kind in ("scan", "columns")
    assert plan.count == "every"
    assert plan.describe().endswith(f"all {N} records tested")


def test_every_plan_names_how_its_count_is_known(topic: Topic) -> None:
    for text in (None, "/symbol = 'S001'", "/price > 400", "/qty = 1", "/orderId = 1"):
        assert topic.explain(text).count in COUNTS
