"""Timing helpers for ``report.py``: batches of operations, median and p99 per operation.

Imports nothing from sowlib.
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs

__all__ = [
    "Stats",
    "chunks",
    "interleaved",
    "settled",
    "per_batch",
    "percentile",
    "repeat",
    "timed",
]

T = TypeVar("T")
#: The seed of the orders :func:`interleaved` runs its contenders in.
_ORDER_SEED = 20240301


@attrs.frozen
class Stats:
    """Timings of ``ops`` operations done in ``samples`` timed batches."""

    ops: int
    total_s: float
    samples: int
    median_us: float
    p99_us: float

    @property
    def rate(self) -> float:
        """Operations per second over the whole run."""
        return self.ops / self.total_s if self.total_s > 0 else math.inf

    @property
    def per_op_us(self) -> float:
        """Mean microseconds per operation."""
        return self.total_s / self.ops * 1e6


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` cut into consecutive slices of ``size`` (the last may be shorter)."""
    return [items[i : i + size] for i in range(0, len(items), size)]


@contextmanager
def settled() -> Iterator[None]:
    """Collect garbage first; the collector stays on while timing, as in an application."""
    gc.collect()
    yield


def per_batch(fn: Callable[[Any], object], batches: Sequence[Any], ops_per_batch: int) -> Stats:
    """Call ``fn(batch)`` for each batch, timing each; per-op median and p99 from batches."""
    times = []
    clock = time.perf_counter
    with settled():
        for batch in batches:
            t0 = clock()
            fn(batch)
            times.append(clock() - t0)
    return _stats(times, ops_per_batch * len(batches), ops_per_batch)


def interleaved(
    work: Mapping[str, tuple[Callable[[Any], object], Sequence[Any]]], ops_per_batch: int
) -> dict[str, Stats]:
    """Time several contenders batch by batch, taking turns, so they share the same noise.

    ``work`` maps a name to ``(fn, batches)``; every contender has the same number of
    batches, and batch ``i`` of each runs back to back, in an order shuffled each round
    (seeded: the same orders every run). In a fixed order the contender that always ran
    right after the peers' batches paid for the caches they left (about 1 µs per
    publish of 1,000 messages: updates against inserts gave 0.73x with the updates
    first, 1.10x with the inserts first, and 0.90x with no peer between).
    """
    times: dict[str, list[float]] = {name: [] for name in work}
    counts = dict.fromkeys(work, 0)
    rounds = {len(batches) for _, batches in work.values()}
    if len(rounds) != 1:
        raise ValueError(f"contenders have different numbers of batches: {sorted(rounds)}")
    clock = time.perf_counter
    order = list(work)
    shuffle = random.Random(_ORDER_SEED).shuffle
    with settled():
        for i in range(rounds.pop()):
            shuffle(order)
            for name in order:
                fn, batches = work[name]
                batch = batches[i]
                t0 = clock()
                fn(batch)
                times[name].append(clock() - t0)
                counts[name] += ops_per_batch
    return {name: _stats(times[name], counts[name], ops_per_batch) for name in work}


def repeat(fn: Callable[[], object], times: int, ops: int) -> Stats:
    """Call ``fn()`` ``times`` times (each doing ``ops`` operations); whole-call samples."""
    samples = []
    clock = time.perf_counter
    with settled():
        for _ in range(times):
            t0 = clock()
            fn()
            samples.append(clock() - t0)
    return _stats(samples, ops * times, ops)


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds taken by one call of ``fn`` and its result."""
    with settled():
        t0 = time.perf_counter()
        result = fn()
        return time.perf_counter() - t0, result


def _stats(times: list[float], ops: int, ops_per_batch: int) -> Stats:
    return Stats(
        ops=ops,
        total_s=sum(times),
        samples=len(times),
        median_us=statistics.median(times) / ops_per_batch * 1e6,
        p99_us=percentile(times, 99) / ops_per_batch * 1e6,
    )
