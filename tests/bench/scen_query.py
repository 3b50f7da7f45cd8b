"""Filter-language targets for ``report.py``: compile and evaluate filters.

The queries themselves are measured in ``scen_read``.
"""

from __future__ import annotations

import time

from cases import PREDICATE, clause_filter
from rows import Row, bound
from scen_store import BATCH
from timing import Stats, chunks, interleaved, per_batch
from workload import Sizes, orders

import sowlib.expr
from sowlib.expr import compile_filter

__all__ = ["compile_rows", "eval_rows"]

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
