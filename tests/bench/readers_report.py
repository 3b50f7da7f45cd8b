"""Concurrent readers: P read-only processes doing lookups beside an unthrottled writer.

Usage: ``python tests/bench/readers_report.py [--records N] [--readers 1 2 4 8]
[--seconds 5] [--quick]`` prints a markdown table; ``report.py`` runs the same
measurement as its ``readers`` scenario.

Both contenders hold the same N distinct JSON orders: sowlib as a topic keyed by
/orderId with a hash index on /symbol and a memo index on /price, sqlite3 as a WAL
table with the same two expression indexes. For each P, with and without a writer,
sowlib and sqlite3 take turns: P reader processes (spawned, each with its own
``SowStore(path, readonly=True)`` calling ``refresh()`` every 0.1 s, or its own
``file:...?mode=ro`` sqlite3 connection) look up random orderIds and read each
document, while a writer process updates random existing keys in batches of 100
(``publish_many`` / ``executemany`` in one transaction) as fast as it can. Everyone
starts together and runs for a fixed time; the rows give lookups/s summed over the
readers and the writer's updates/s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
for _p in (str(_HERE), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from peers import SqlitePeer  # noqa: E402  (the path setup above)
from rows import Row, compare_rates, markdown  # noqa: E402
from timing import chunks  # noqa: E402
from workload import SEED, Sizes, json_orders  # noqa: E402

__all__ = ["READERS", "main", "measure", "readers_rows"]

#: Reader processes per configuration.
READERS = (1, 2, 4, 8)
#: Seconds between two ``refresh()`` calls of a sowlib reader.
REFRESH_EVERY = 0.1
#: Updates per writer transaction.
WRITE_BATCH = 100
_G = "readers"
_INDEXES: dict[str, Any] = {"hash_indexes": [["/symbol"]], "indexes": ["/price"]}
_SQL_GET = "SELECT doc FROM orders WHERE k = ?"


def _messages(n: int) -> tuple[bytes, ...]:
    return json_orders(n, seed=SEED + 50)


def build(directory: str, n: int) -> tuple[str, str]:
    """Write the same ``n`` orders to a sowlib store and a sqlite3 file; their paths."""
    from sowlib import SowStore

    store_dir, sql_path = os.path.join(directory, "sow"), os.path.join(directory, "orders.sqlite")
    store = SowStore(store_dir)
    topic = store.create_topic("orders", keys=["/orderId"], **_INDEXES)
    sql = SqlitePeer(sql_path, expression_indexes=["/symbol", "/price"])
    for batch in chunks(_messages(n), 10_000):
        topic.publish_many(batch)
        sql.publish_many(batch)
    store.close()
    sql.close()
    return store_dir, sql_path


def _child(target: Callable[..., tuple[str, int, float]], *args: Any) -> None:
    ready, results = args[-3], args[-1]
    try:
        results.put(target(*args))
    except BaseException as exc:
        ready.put(-1)  # unblock the parent if the failure came before the start
        results.put(("error", 0, repr(exc)))
        raise


def _reader(engine: str, path: str, n: int, seed: int, seconds: float, ready: Any, go: Any,
            results: Any) -> tuple[str, int, float]:  # fmt: skip
    rng = random.Random(seed)
    ids = [rng.randrange(n) for _ in range(1 << 16)]
    refresh: Callable[[], None] | None = None
    if engine == "sowlib":
        from sowlib import SowStore

        store = SowStore(path, readonly=True)

        def refresh() -> None:
            # a refresh that meets a compacted file reopens the topic: fetch it again
            nonlocal lookup
            store.refresh()
            lookup = store.topic("orders").lookup

        lookup = store.topic("orders").lookup

        def read(keys: Sequence[int]) -> None:
            for k in keys:
                lookup(k).data  # noqa: B018  (the record's bytes are read)
    else:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        execute = conn.execute

        def read(keys: Sequence[int]) -> None:
            for k in keys:
                execute(_SQL_GET, (k,)).fetchone()[0]

    read(ids[:100])
    ready.put(os.getpid())
    go.wait()
    clock = time.perf_counter
    start = clock()
    end, next_refresh = start + seconds, start + REFRESH_EVERY
    done = at = 0
    while True:
        read(ids[at : at + 100])
        done += 100
        at = (at + 100) & 0xFFFF
        now = clock()
        if now >= end:
            break
        if refresh is not None and now >= next_refresh:
            refresh()
            next_refresh = now + REFRESH_EVERY
    return ("reader", done, clock() - start)


def _writer(engine: str, path: str, n: int, seconds: float, ready: Any, go: Any,
            results: Any) -> tuple[str, int, float]:  # fmt: skip
    batches = chunks(json_orders(20_000, order_ids=n, seed=SEED + 51), WRITE_BATCH)
    if engine == "sowlib":
        from sowlib import SowStore

        store = SowStore(path)
        publish: Callable[[Any], object] = store.topic("orders").publish_many
    else:
        peer = SqlitePeer(path)
        publish = peer.publish_many
    ready.put(os.getpid())
    go.wait()
    clock = time.perf_counter
    start = clock()
    end = start + seconds
    done = i = 0
    while clock() < end:
        publish(batches[i % len(batches)])
        done += WRITE_BATCH
        i += 1
    took = clock() - start
    if engine == "sowlib":
        store.close()
    else:
        peer.close()
    return ("writer", done, took)


def run_config(engine: str, path: str, n: int, readers: int, writer: bool, seconds: float
               ) -> tuple[float, float]:  # fmt: skip
    """One configuration in fresh processes: (lookups/s over all readers, writer updates/s)."""
    ctx = mp.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(
            target=_child, args=(_reader, engine, path, n, SEED + i, seconds, ready, go, results)
        )
        for i in range(readers)
    ]
    if writer:
        procs.append(
            ctx.Process(target=_child, args=(_writer, engine, path, n, seconds, ready, go, results))
        )
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=600)
        go.set()
        got = [results.get(timeout=seconds + 600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    failed = [why for kind, _, why in got if kind == "error"]
    if failed:
        raise RuntimeError(f"{engine}: a child failed: {failed[0]}")
    reads = sum(done / took for kind, done, took in got if kind == "reader")
    writes = sum(done / took for kind, done, took in got if kind == "writer")
    return reads, writes


def measure(directory: str, n: int, readers: Sequence[int], seconds: float,
            progress: Callable[[str], None] | None = None) -> list[Row]:  # fmt: skip
    """Build the data in ``directory`` and run every configuration; the report rows."""
    store_dir, sql_path = build(directory, n)
    rows = []
    for writer in (False, True):
        for p in readers:
            sow_reads, sow_writes = run_config("sowlib", store_dir, n, p, writer, seconds)
            sql_reads, sql_writes = run_config("sqlite", sql_path, n, p, writer, seconds)
            beside = "beside an unthrottled writer" if writer else "no writer"
            op = f"{p} read-only process{'es' if p > 1 else ''} doing lookup, {beside}"
            if writer:
                op += f" (sowlib writer {sow_writes:,.0f} updates/s)"
            rows.append(
                compare_rates(
                    _G,
                    op,
                    sow_reads,
                    f"{p} sqlite3 mode=ro WAL reader{'s' if p > 1 else ''}",
                    sql_reads,
                    2.0 if writer else None,
                    unit="lookups/s",
                    note=f"sqlite3 writer {sql_writes:,.0f} updates/s" if writer else "",
                )
            )
            if progress:
                progress(f"{p} readers, {beside}: {sow_reads:,.0f} vs {sql_reads:,.0f}")
    return rows


def readers_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """The ``readers`` scenario of ``report.py``: ``sizes.readers`` records, P in READERS."""
    os.makedirs(tmp, exist_ok=True)
    n = f"{sizes.readers:,} records"
    rows = measure(tmp, sizes.readers, READERS, sizes.seconds)
    return [attrs.evolve(r, operation=f"{r.operation}, {n}") for r in rows]


def main(argv: list[str] | None = None) -> int:
    """Entry point: print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--readers", type=int, nargs="+", default=list(READERS))
    parser.add_argument("--seconds", type=float, default=5.0, help="per configuration")
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 s each")
    args = parser.parse_args(argv)
    records, seconds = (100_000, 1.0) if args.quick else (args.records, args.seconds)
    with tempfile.TemporaryDirectory(prefix="sowlib-readers-") as tmp:
        rows = measure(tmp, records, args.readers, seconds,
                       lambda line: print(line, file=sys.stderr, flush=True))  # fmt: skip
    print(f"{records:,} records, {seconds:g} s per configuration\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
