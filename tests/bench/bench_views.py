"""Views: publish rate with one view of 1,000 groups against none (target >= 0.5x), and a
view's ``sow`` against sqlite3 ``GROUP BY`` over the same records.

Run as a script for the figures (``python tests/bench/bench_views.py --records 20000``),
or through the ``bench`` session (pytest-benchmark).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from sowlib import SowStore

GROUPS = 1_000
PROJECTION = [
    "/customer",
    "SUM(/quantity * /price) AS /total",
    "COUNT(*) AS /orders",
    "MAX(/price) AS /top",
]


def orders(count: int, seed: int = 7) -> list[bytes]:
    """``count`` order messages over 2x as many keys as records/2, in ``GROUPS`` customers."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        doc = {
            "orderId": rng.randrange(count // 2 or 1),
            "customer": f"c{rng.randrange(GROUPS)}",
            "quantity": rng.randrange(1, 100),
            "price": round(rng.uniform(1, 500), 2),
            "seq": i,
        }
        out.append(json.dumps(doc).encode())
    return out


def publish_rate(messages: list[bytes], with_view: bool) -> float:
    """Messages per second into a memory store's topic (with or without the view)."""
    with SowStore() as store:
        topic = store.create_topic("orders", keys=["/orderId"])
        if with_view:
            store.create_view("totals", "orders", projection=PROJECTION, grouping=["/customer"])
        publish = topic.publish
        start = time.perf_counter()
        for m in messages:
            publish(m)
        return len(messages) / (time.perf_counter() - start)


def best(fn: Callable[[], Any], rounds: int = 3) -> tuple[float, Any]:
    """The fastest of ``rounds`` runs of ``fn``: (seconds, its result)."""
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def sow_vs_sqlite(messages: list[bytes]) -> dict[str, float]:
    """Seconds to answer the view's ``sow``, and to compute it with sqlite3 ``GROUP BY``."""
    with SowStore() as store:
        topic = store.create_topic("orders", keys=["/orderId"])
        view = store.create_view("totals", "orders", projection=PROJECTION, grouping=["/customer"])
        topic.publish_many(messages)
        view_seconds, rows = best(view.sow)
        docs = [r.doc for r in topic.sow()]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (customer TEXT, quantity INTEGER, price REAL)")
    db.executemany(
        "INSERT INTO orders VALUES (?, ?, ?)",
        [(d["customer"], d["quantity"], d["price"]) for d in docs],
    )
    query = (
        "SELECT customer, SUM(quantity * price), COUNT(*), MAX(price) FROM orders GROUP BY customer"
    )
    sql_seconds, got = best(lambda: db.execute(query).fetchall())
    assert len(got) == len(rows)
    return {"view_sow": view_seconds, "sqlite_group_by": sql_seconds, "groups": len(rows)}


@pytest.mark.benchmark(group="views-publish")
@pytest.mark.parametrize("with_view", [False, True], ids=["no-view", "view-1000-groups"])
def test_publish_with_and_without_a_view(benchmark: Any, with_view: bool) -> None:
    messages = orders(20_000)
    rate = benchmark.pedantic(lambda: publish_rate(messages, with_view), rounds=3)
    assert rate > 0


@pytest.mark.benchmark(group="views-sow")
def test_view_sow_against_sqlite_group_by(benchmark: Any) -> None:
    figures = benchmark.pedantic(lambda: sow_vs_sqlite(orders(20_000)), rounds=1)
    assert figures["groups"] == GROUPS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args(argv)
    messages = orders(args.records)
    plain = max(publish_rate(messages, False) for _ in range(3))
    viewed = max(publish_rate(messages, True) for _ in range(3))
    print(f"records: {args.records}, groups: {GROUPS}")
    print(f"publish without a view: {plain:,.0f}/s")
    print(f"publish with one view:  {viewed:,.0f}/s  ({viewed / plain:.2f}x, target >= 0.5x)")
    figures = sow_vs_sqlite(messages)
    print(
        f"view sow ({figures['groups']:.0f} groups): {figures['view_sow'] * 1e3:.2f} ms;"
        f" sqlite3 GROUP BY over the records: {figures['sqlite_group_by'] * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
