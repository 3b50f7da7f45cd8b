"""Views: publish rate with one view of 1,000 groups against none (target >= 0.5x), one
message at a time and in ``publish_many`` batches, with the view unread, read once at
the end, and watched by a subscriber (:data:`MODES`; the watched view written by the
trusted write and by its reference); and a view's ``sow`` against
sqlite3 ``GROUP BY`` over the same records.

Run as a script for the figures (``python tests/bench/bench_views.py --records 20000``;
the runs with and without the view are interleaved, ``--repeats`` times, for a shared
machine), or through the ``bench`` session (pytest-benchmark).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.views.feed import ViewFeed

GROUPS = 1_000
#: The views measured, by kind: the official client sample's (one SUM of a product), the
#: report's mix (SUM, COUNT(*), MAX), and the other aggregates (AVG, MIN, STDDEV_POP;
#: COUNT_DISTINCT).
VIEWS = {
    "sum": ["/customer", "SUM(/quantity * /price) AS /total"],
    "mixed": [
        "/customer",
        "SUM(/quantity * /price) AS /total",
        "COUNT(*) AS /orders",
        "MAX(/price) AS /top",
    ],
    "avg-min-stddev": [
        "/customer",
        "AVG(/price) AS /mean",
        "MIN(/price) AS /low",
        "STDDEV_POP(/quantity) AS /spread",
    ],
    "count-distinct": ["/customer", "COUNT_DISTINCT(/quantity) AS /sizes"],
}
PROJECTION = VIEWS["mixed"]


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


#: What runs beside the publisher: no view; a view nobody reads meanwhile; the same,
#: read once at the end (its deferred upkeep paid, in the time); a view with a
#: subscriber (its topic written at the end of every write, by the trusted write of
#: the changed groups); the same with the reference write, a publish per group.
MODES = ("none", "view", "view+sow", "watched", "watched-ref")


def look(msg: Any) -> None:
    """The watched view's subscriber: reads the message's key and data."""
    if not (msg.sow_key and msg.data):
        raise AssertionError(msg)


def publish_rate(
    messages: list[bytes], with_view: bool | str, batch: int = 0, kind: str = "mixed"
) -> float:
    """Messages per second of CPU time into a memory store's topic (a mode of :data:`MODES`; True is
    ``"view"``, False ``"none"``), one ``publish`` each, or ``publish_many`` of ``batch``
    messages at a time; the view is ``VIEWS[kind]``."""
    mode = ("view" if with_view else "none") if isinstance(with_view, bool) else with_view
    with SowStore() as store:
        topic = store.create_topic("orders", keys=["/orderId"])
        view = None
        if mode != "none":
            ViewFeed.trusted_writes = mode != "watched-ref"
            try:
                view = store.create_view(
                    "totals", "orders", projection=VIEWS[kind], grouping=["/customer"]
                )
            finally:
                ViewFeed.trusted_writes = True
        sub = None
        if mode.startswith("watched") and view is not None:
            # a subscriber that looks at each message and keeps none (keeping every one
            # would time the garbage collector's walks over them: the subscriber's cost)
            sub = view.subscribe(look, oof=True)
        start = time.process_time()  # CPU time: the machine may be shared
        if batch:
            for at in range(0, len(messages), batch):
                topic.publish_many(messages[at : at + batch])
        else:
            publish = topic.publish
            for m in messages:
                publish(m)
        if mode == "view+sow" and view is not None:
            assert len(view.sow()) > 0
        seconds = time.process_time() - start
        assert sub is None or sub.delivered > 0
        return len(messages) / seconds


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
@pytest.mark.parametrize("batch", [0, 1000], ids=["publish", "publish_many-1000"])
@pytest.mark.parametrize("mode", MODES)
def test_publish_with_and_without_a_view(benchmark: Any, mode: str, batch: int) -> None:
    messages = orders(20_000)
    rate = benchmark.pedantic(lambda: publish_rate(messages, mode, batch), rounds=3)
    assert rate > 0


@pytest.mark.benchmark(group="views-watched")
@pytest.mark.parametrize("batch", [0, 1000], ids=["publish", "publish_many-1000"])
@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_publish_into_a_watched_view_by_kind(benchmark: Any, kind: str, batch: int) -> None:
    messages = orders(20_000)
    rate = benchmark.pedantic(lambda: publish_rate(messages, "watched", batch, kind), rounds=3)
    assert rate > 0


@pytest.mark.benchmark(group="views-sow")
def test_view_sow_against_sqlite_group_by(benchmark: Any) -> None:
    figures = benchmark.pedantic(lambda: sow_vs_sqlite(orders(20_000)), rounds=1)
    assert figures["groups"] == GROUPS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="publish_many batch size")
    parser.add_argument(
        "--views",
        default="mixed",
        help=f"comma-separated kinds of {sorted(VIEWS)}: every mode for the first, the"
        " watched modes for the others",
    )
    args = parser.parse_args(argv)
    kinds = args.views.split(",")
    messages = orders(args.records)
    print(f"records: {args.records}, groups: {GROUPS}")
    runs = [(mode, kinds[0]) for mode in MODES]
    runs += [(mode, kind) for kind in kinds[1:] for mode in ("watched", "watched-ref")]
    for label, batch in (("publish", 0), (f"publish_many({args.batch})", args.batch)):
        rates: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
        for _ in range(args.repeats):  # interleaved: the machine's load changes meanwhile
            for mode, kind in runs:
                rates[mode, kind].append(publish_rate(messages, mode, batch, kind))
        plain = rates["none", kinds[0]]
        print(f"{label}: without a view {max(plain):,.0f}/s")
        for mode, kind in runs[1:]:
            ratios = [v / p for v, p in zip(rates[mode, kind], plain, strict=True)]
            median = statistics.median(ratios)
            print(
                f"  {kind} {mode}: {max(rates[mode, kind]):,.0f}/s; ratio median {median:.2f}x"
                f" (runs: {', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.5x)"
            )
    figures = sow_vs_sqlite(messages)
    print(
        f"view sow ({figures['groups']:.0f} groups): {figures['view_sow'] * 1e3:.2f} ms;"
        f" sqlite3 GROUP BY over the records: {figures['sqlite_group_by'] * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
