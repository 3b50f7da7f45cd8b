"""Concurrent readers: P read-only processes doing lookups beside an unthrottled writer.

Usage: ``python tests/bench/readers_report.py [--records N] [--readers 1 2 4 8]
[--seconds 5] [--quick]`` prints a markdown table; ``report.py`` runs the same
measurement as its ``readers`` scenario.

Both contenders hold the same N distinct JSON orders: sowlib as a topic keyed by
/orderId with a hash index on /symbol and a memo index on /price, sqlite3 as a WAL
table with the same two expression indexes. For each P, with and without a writer,
sowlib and sqlite3 take turns: P reader processes (spawned once per engine and reused,
each with its own ``SowStore(path, readonly=True)`` calling ``refresh()`` every 0.1 s,
or its own ``file:...?mode=ro`` sqlite3 connection) look up random orderIds and read
each document, while a writer process (started for the configuration) updates random
existing keys in batches of 100 (``publish_many`` / ``executemany`` in one
transaction) as fast as it can. Everyone starts together and runs for a fixed time;
the rows give lookups/s summed over the readers and the writer's updates/s.
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

__all__ = ["READERS", "ReaderPool", "main", "measure", "readers_rows"]

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


def _opened(engine: str, path: str) -> tuple[Callable[[Sequence[int]], None], Callable[[], None]]:
    """A reader's ``read(keys)`` (each document read) and ``refresh()`` (sqlite3: nothing)."""
    if engine == "sowlib":
        from sowlib import SowStore

        store = SowStore(path, readonly=True)
        lookup = store.topic("orders").lookup

        def refresh() -> None:
            # a refresh that meets a compacted file reopens the topic: fetch it again
            nonlocal lookup
            store.refresh()
            lookup = store.topic("orders").lookup

        def read(keys: Sequence[int]) -> None:
            for k in keys:
                lookup(k).data  # noqa: B018  (the record's bytes are read)

        return read, refresh
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    execute = conn.execute

    def read_sql(keys: Sequence[int]) -> None:
        for k in keys:
            execute(_SQL_GET, (k,)).fetchone()[0]

    return read_sql, lambda: None


def _wait_until(start_at: float) -> None:
    pause = start_at - time.time()
    if pause > 0:
        time.sleep(pause)


def _reader(engine: str, path: str, n: int, seed: int, commands: Any, results: Any) -> None:
    """A reader process: open once, then one timed run per command until ``None``."""
    try:
        rng = random.Random(seed)
        ids = [rng.randrange(n) for _ in range(1 << 16)]
        read, refresh = _opened(engine, path)
        read(ids[:100])
        results.put(("ready", 0, 0.0))
        sowlib = engine == "sowlib"
        clock = time.perf_counter
        at = 0
        while (command := commands.get()) is not None:
            start_at, seconds = command
            refresh()
            _wait_until(start_at)
            start = clock()
            end, next_refresh = start + seconds, start + REFRESH_EVERY
            done = 0
            while True:
                read(ids[at : at + 100])
                done += 100
                at = (at + 100) & 0xFFFF
                now = clock()
                if now >= end:
                    break
                if sowlib and now >= next_refresh:
                    refresh()
                    next_refresh = now + REFRESH_EVERY
            results.put(("reader", done, clock() - start))
    except BaseException as exc:
        results.put(("error", 0, repr(exc)))
        raise


def _writer(engine: str, path: str, n: int, commands: Any, results: Any) -> None:
    """A writer process: open, report ready, update random existing keys for one run."""
    try:
        batches = chunks(json_orders(20_000, order_ids=n, seed=SEED + 51), WRITE_BATCH)
        if engine == "sowlib":
            from sowlib import SowStore

            store = SowStore(path)
            publish: Callable[[Any], object] = store.topic("orders").publish_many
            close: Callable[[], object] = store.close
        else:
            peer = SqlitePeer(path)
            publish, close = peer.publish_many, peer.close
        results.put(("ready", 0, 0.0))
        start_at, seconds = commands.get()
        _wait_until(start_at)
        clock = time.perf_counter
        start = clock()
        end = start + seconds
        done = i = 0
        while clock() < end:
            publish(batches[i % len(batches)])
            done += WRITE_BATCH
            i += 1
        took = clock() - start
        close()
        results.put(("writer", done, took))
    except BaseException as exc:
        results.put(("error", 0, repr(exc)))
        raise


def _take(results: Any, count: int, timeout: float) -> list[tuple[str, int, float]]:
    got = [results.get(timeout=timeout) for _ in range(count)]
    failed = [why for kind, _, why in got if kind == "error"]
    if failed:
        raise RuntimeError(f"a child process failed: {failed[0]}")
    return got


class ReaderPool:
    """``size`` reader processes of one engine, opened once and reused by every run."""

    def __init__(self, engine: str, path: str, n: int, size: int) -> None:
        self.engine, self.path, self.n = engine, path, n
        self.ctx = mp.get_context("spawn")
        self.results = self.ctx.Queue()
        self.commands = [self.ctx.Queue() for _ in range(size)]
        self.procs = [
            self.ctx.Process(target=_reader, args=(engine, path, n, SEED + i, q, self.results))
            for i, q in enumerate(self.commands)
        ]
        for proc in self.procs:
            proc.start()
        _take(self.results, size, 600)

    def run(self, readers: int, writer: bool, seconds: float) -> tuple[float, float]:
        """One configuration: (lookups/s summed over ``readers``, the writer's updates/s)."""
        procs = []
        if writer:
            commands = self.ctx.Queue()
            procs.append(
                self.ctx.Process(
                    target=_writer, args=(self.engine, self.path, self.n, commands, self.results)
                )
            )
            procs[0].start()
            _take(self.results, 1, 600)
        start = (time.time() + 0.5, seconds)
        if writer:
            commands.put(start)
        for q in self.commands[:readers]:
            q.put(start)
        try:
            got = _take(self.results, readers + writer, seconds + 600)
        finally:
            for proc in procs:
                proc.join(timeout=120)
        reads = sum(done / took for kind, done, took in got if kind == "reader")
        writes = sum(done / took for kind, done, took in got if kind == "writer")
        return reads, writes

    def close(self) -> None:
        """Stop the readers."""
        for q in self.commands:
            q.put(None)
        for proc in self.procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()


def measure(directory: str, n: int, readers: Sequence[int], seconds: float,
            progress: Callable[[str], None] | None = None) -> list[Row]:  # fmt: skip
    """Build the data in ``directory`` and run every configuration; the report rows."""
    store_dir, sql_path = build(directory, n)
    pools = {
        "sowlib": ReaderPool("sowlib", store_dir, n, max(readers)),
        "sqlite": ReaderPool("sqlite", sql_path, n, max(readers)),
    }
    rows = []
    try:
        for writer in (False, True):
            for p in readers:
                sow_reads, sow_writes = pools["sowlib"].run(p, writer, seconds)
                sql_reads, sql_writes = pools["sqlite"].run(p, writer, seconds)
                rows.append(_row(p, writer, sow_reads, sow_writes, sql_reads, sql_writes))
                if progress:
                    progress(f"{rows[-1].operation}: {sow_reads:,.0f} vs {sql_reads:,.0f}")
    finally:
        for pool in pools.values():
            pool.close()
    return rows


def _row(p: int, writer: bool, sow_reads: float, sow_writes: float, sql_reads: float,
         sql_writes: float) -> Row:  # fmt: skip
    beside = "beside an unthrottled writer" if writer else "no writer"
    op = f"{p} read-only process{'es' if p > 1 else ''} doing lookup, {beside}"
    if writer:
        op += f" (sowlib writer {sow_writes:,.0f} updates/s)"
    return compare_rates(
        _G,
        op,
        sow_reads,
        f"{p} sqlite3 mode=ro WAL reader{'s' if p > 1 else ''}",
        sql_reads,
        2.0 if writer else None,
        unit="lookups/s",
        note=f"sqlite3 writer {sql_writes:,.0f} updates/s" if writer else "",
    )


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
