"""Filter compile and evaluation speed; run directly: python tests/bench/bench_filter_eval.py."""

from __future__ import annotations

import random
import time

from sowlib.expr import clear_cache, compile_filter

TARGET = "(/price > 100 AND /side = 'B') OR /region IN ('EU','APAC')"


def _docs(n: int) -> list[dict[str, object]]:
    rnd = random.Random(7)
    return [
        {
            "price": rnd.choice([50, 99.5, 150, 250.25]),
            "side": rnd.choice("BS"),
            "region": rnd.choice(["EU", "US", "APAC", "LATAM"]),
            "qty": rnd.randint(1, 1000),
        }
        for _ in range(n)
    ]


def evaluations_per_second(text: str = TARGET, n: int = 200_000) -> float:
    """Best of three runs of ``Filter.matcher`` over ``n`` decoded dicts."""
    docs = _docs(n)
    matches = compile_filter(text).matcher
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for d in docs:
            matches(d, None)
        best = min(best, time.perf_counter() - t0)
    return n / best


def evaluations_per_second_method(f: object, n: int = 200_000) -> float:
    """As :func:`evaluations_per_second` through the bound ``Filter.matches``."""
    docs = _docs(n)
    matches = f.matches  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    for d in docs:
        matches(d)
    return n / (time.perf_counter() - t0)


def compile_seconds(clauses: int = 20, repeat: int = 200) -> tuple[float, float]:
    """(uncached, cached) seconds to compile a ``clauses``-clause filter."""
    parts = [f"/f{i} > {i}" if i % 2 else f"/g{i} IN ('a', 'b', {i})" for i in range(clauses)]
    text = " AND ".join(parts)
    t0 = time.perf_counter()
    for i in range(repeat):
        clear_cache()
        compile_filter(text + f" OR /z = {i}")
    uncached = (time.perf_counter() - t0) / repeat
    compile_filter(text)
    t0 = time.perf_counter()
    for _ in range(repeat * 100):
        compile_filter(text)
    cached = (time.perf_counter() - t0) / (repeat * 100)
    return uncached, cached


def test_filter_eval_speed() -> None:
    assert evaluations_per_second(n=20_000) > 0


if __name__ == "__main__":
    print(f"{TARGET}: {evaluations_per_second():,.0f} evaluations/s (Filter.matcher)")
    f = compile_filter(TARGET)
    print(f"  via the bound method: {evaluations_per_second_method(f):,.0f} evaluations/s")
    unc, cac = compile_seconds()
    print(f"20-clause compile: uncached {unc * 1e6:,.0f} us, cached {cac * 1e6:,.2f} us")
