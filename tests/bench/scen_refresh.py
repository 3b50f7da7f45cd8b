"""Refresh targets for ``report.py``: a read-only opener catching up with a writer.

Two stores of ``sizes.records`` distinct orders, one topic with the declared indexes
(hash /symbol, memo /price) and one without; a ``SowStore(path, readonly=True)`` opener
beside each. Each round the writer publishes k new records to both, then each opener's
``refresh()`` is timed, the two taking turns, once the store directories have
settled (see ``_settle``). A read-only topic files a refresh's
records into its indexes when a query next reads them, so the indexed opener's first
``/symbol`` query after each refresh is timed too, and reported with the refresh (what
catching up costs a reader that queries). Last, each opener's refresh() finding
nothing new is timed: the fixed cost of a call.
"""

from __future__ import annotations

import os
import time
from typing import Any

from rows import Row, bound, compare
from scen_read import read_messages
from scen_store import BATCH
from scen_write import INDEXES
from timing import Stats, chunks, settled
from workload import SEED, Sizes, json_orders

from sowlib import SowStore

__all__ = ["STEPS", "refresh_rows"]

#: New records per refresh.
STEPS = (1, 10, 100, 1000)
_G = "refresh"


def refresh_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """refresh() after k new records: µs per record, indexed vs unindexed topic."""
    msgs = read_messages(sizes)
    rounds = sizes.samples
    fresh = json_orders(
        rounds * sum(STEPS), symbols=sizes.symbols, first_id=sizes.records, seed=SEED + 40
    )
    pairs: dict[str, tuple[Any, SowStore]] = {}
    opened: list[SowStore] = []
    for name, options in (("indexed", INDEXES), ("plain", {})):
        directory = os.path.join(tmp, name)
        writer = SowStore(directory)
        topic = writer.create_topic("orders", keys=["/orderId"], **options)
        for batch in chunks(msgs, 10 * BATCH):
            topic.publish_many(batch)
        reader = SowStore(directory, readonly=True)
        reader.topic("orders").sow("/symbol = 'warm-up'")
        pairs[name] = (topic, reader)
        opened += [writer, reader]
    _settle([reader for _topic, reader in pairs.values()], tmp)
    rows: list[Row] = []
    at = 0
    for k in STEPS:
        times: dict[str, list[float]] = {name: [] for name in pairs}
        caught_up: list[float] = []  # refresh + the first indexed query after it
        with settled():
            for i in range(rounds):
                batch = fresh[at : at + k]
                at += k
                for name, (topic, reader) in pairs.items():
                    topic.publish_many(batch)
                    times[name].append(_timed_refresh(reader, k))
                t0 = time.perf_counter()
                pairs["indexed"][1].topic("orders").sow(f"/symbol = 'SYM{i % sizes.symbols:03d}'")
                caught_up.append(times["indexed"][-1] + time.perf_counter() - t0)
        stats = {name: _stats(t, k) for name, t in times.items()}
        for topic, reader in pairs.values():
            assert len(reader.topic("orders")) == len(topic)
        rows.append(
            bound(
                _G,
                f"refresh() after {k} new records, indexed topic",
                stats["indexed"].median_us,
                "µs/record",
                5.0,
                stats=stats["indexed"],
            )
        )
        both = _stats(caught_up, k)
        rows.append(
            bound(
                _G,
                f"refresh() after {k} new records, indexed topic, then the first /symbol query"
                " (the index upkeep the refresh left to it)",
                both.median_us,
                "µs/record",
                None,
                stats=both,
            )
        )
        rows.append(
            compare(
                _G,
                f"refresh() after {k} new records, indexed topic",
                stats["indexed"],
                "the same, unindexed topic",
                stats["plain"],
                0.5,
                unit="records/s",
            )
        )
    rows += _nothing_new_rows(pairs, rounds)
    indexed = pairs["indexed"][1].topic("orders")
    assert len(indexed.sow(f"/orderId = {sizes.records}")) == 1
    for store in opened:
        store.close()
    return rows


def _settle(readers: list[SowStore], tmp: str) -> None:
    """Wait until the stores' directories last changed over a second ago, then refresh
    each reader once: its walk of the directory then counts as settled (a directory
    changed within the file system's clock tick may change again unseen), and the
    timed refreshes look at the directory with one ``stat`` each, as a reader that
    runs longer than a second after the writer last created a file does. Before that,
    each refresh walks the directory again (``sowlib.store_files.TopicFiles``)."""
    changed = max(os.stat(folder).st_mtime for folder, _dirs, _files in os.walk(tmp))
    time.sleep(max(0.0, changed + 1.1 - time.time()))
    for reader in readers:
        assert reader.refresh() == 0


def _nothing_new_rows(pairs: dict[str, tuple[Any, SowStore]], rounds: int) -> list[Row]:
    """refresh() finding nothing new: what every call costs before its records."""
    times: dict[str, list[float]] = {name: [] for name in pairs}
    with settled():
        for _ in range(rounds):
            for name, (_topic, reader) in pairs.items():
                times[name].append(_timed_refresh(reader, 0))
    rows: list[Row] = []
    for name, label in (("indexed", "indexed topic"), ("plain", "unindexed topic")):
        stats = _stats(times[name], 1)
        rows.append(
            bound(
                _G,
                f"refresh() finding nothing new, {label}",
                stats.median_us,
                "µs/call",
                None,
                stats=stats,
            )
        )
    return rows


def _timed_refresh(reader: SowStore, k: int) -> float:
    t0 = time.perf_counter()
    got = reader.refresh()
    took = time.perf_counter() - t0
    assert got == k, f"refresh applied {got} records, expected {k}"
    return took


def _stats(times: list[float], k: int) -> Stats:
    ordered = sorted(times)
    p99 = ordered[max(0, -(-99 * len(ordered) // 100) - 1)]
    return Stats(
        k * len(times), sum(times), len(times), ordered[len(ordered) // 2] / k * 1e6, p99 / k * 1e6
    )
