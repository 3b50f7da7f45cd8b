"""The report's arithmetic: one ratio direction, the PASS/MISS decision, the sizes."""

from __future__ import annotations

import pytest
from rows import bound, compare, compare_rates, speed_ratio, verdict
from timing import Stats
from workload import Sizes


def _stats(per_op_us: float) -> Stats:
    return Stats(
        ops=10, total_s=per_op_us * 10 / 1e6, samples=10, median_us=per_op_us, p99_us=per_op_us
    )


def test_ratio_is_sowlib_rate_over_peer_rate() -> None:
    fast, slow = _stats(1.0), _stats(2.0)
    assert speed_ratio(fast, slow) == pytest.approx(2.0)
    assert speed_ratio(slow, fast) == pytest.approx(0.5)
    row = compare("g", "op", fast, "peer", slow, 2.0)
    assert row.ratio == pytest.approx(2.0)
    assert row.status == "PASS"
    assert compare("g", "op", slow, "peer", fast, 2.0).status == "MISS"


def test_rates_measured_as_totals_use_the_same_direction() -> None:
    row = compare_rates("g", "op", 300.0, "peer", 100.0, 2.0, unit="lookups/s")
    assert row.ratio == pytest.approx(3.0)
    assert row.status == "PASS"
    assert compare_rates("g", "op", 100.0, "peer", 300.0, 2.0).status == "MISS"


@pytest.mark.parametrize(
    ("value", "need", "at_most", "expected"),
    [
        (1.0, 1.0, False, "PASS"),
        (0.99, 1.0, False, "MISS"),
        (3.0, 3.0, True, "PASS"),
        (3.01, 3.0, True, "MISS"),
        (5.0, None, False, "info"),
    ],
)
def test_verdict(value: float, need: float | None, at_most: bool, expected: str) -> None:
    assert verdict(value, need, at_most=at_most) == expected


def test_bound_states_its_limit_and_decides() -> None:
    row = bound("g", "crash reopen", 2.5, "s", 3.0)
    assert (row.target, row.status) == ("≤ 3.00 s", "PASS")
    assert bound("g", "x", 4.0, "s", None).status == "info"


def test_sizes() -> None:
    million = Sizes.named("1m")
    assert (million.messages, million.order_ids, million.records) == (1_000_000, 250_000, 1_000_000)
    assert Sizes.named("200k") == Sizes.full()
    assert Sizes.full().symbols == 500  # about 100 records per symbol
    assert Sizes.full().quick().records == 5_000
    with pytest.raises(ValueError):
        Sizes.named("2m")


def test_slow_rates_keep_their_digits() -> None:
    row = compare("g", "scan", _stats(12.9e6), "peer", _stats(2.0e6), 3.0, unit="queries/s")
    assert row.measured == "0.0775 queries/s"
    assert row.peer_measured.startswith("0.5 queries/s")
