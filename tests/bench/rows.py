"""Result rows of ``report.py``: one measured target each, and their markdown table.

Every ratio on the page has one direction: sowlib's rate / the peer's rate, so 2.0x
means sowlib is twice as fast. Rates come from the median time per operation (medians
resist the noise of other processes better than totals), except where a figure is a
total over a fixed time (the concurrent readers). Imports nothing from sowlib.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from timing import Stats

__all__ = [
    "Row",
    "bound",
    "compare",
    "compare_rates",
    "info",
    "markdown",
    "speed_ratio",
    "verdict",
]


@attrs.frozen
class Row:
    """One line of the report."""

    group: str
    operation: str
    measured: str
    median_us: float | None = None
    p99_us: float | None = None
    peer: str = ""
    peer_measured: str = ""
    ratio: float | None = None
    target: str = ""
    status: str = "info"


def _rate(stats: Stats, unit: str) -> str:
    return f"{_num(1e6 / stats.median_us)} {unit}"


def speed_ratio(mine: Stats, theirs: Stats) -> float:
    """sowlib's rate / the peer's rate, both from the median time per operation."""
    return theirs.median_us / mine.median_us


def verdict(value: float, need: float | None, *, at_most: bool = False) -> str:
    """``"PASS"`` when ``value`` meets ``need`` (``>=``, or ``<=`` with ``at_most``);
    ``"info"`` when there is no target."""
    if need is None:
        return "info"
    ok = value <= need if at_most else value >= need
    return "PASS" if ok else "MISS"


def compare(
    group: str,
    operation: str,
    mine: Stats,
    peer: str,
    theirs: Stats,
    need: float | None,
    *,
    unit: str = "ops/s",
) -> Row:
    """sowlib vs a peer; PASS when the speed ratio is at least ``need`` (None: info only)."""
    ratio = speed_ratio(mine, theirs)
    return Row(
        group,
        operation,
        _rate(mine, unit),
        mine.median_us,
        mine.p99_us,
        peer,
        f"{_rate(theirs, unit)} (p50 {theirs.median_us:.2f} / p99 {theirs.p99_us:.2f} µs)",
        ratio,
        f"≥ {need:g}x" if need is not None else "",
        verdict(ratio, need),
    )


def compare_rates(
    group: str,
    operation: str,
    mine: float,
    peer: str,
    theirs: float,
    need: float | None,
    *,
    unit: str = "ops/s",
    note: str = "",
) -> Row:
    """Two rates measured as totals (no per-operation samples); ratio = mine / theirs."""
    ratio = mine / theirs if theirs > 0 else float("inf")
    return Row(
        group,
        operation,
        f"{_num(mine)} {unit}",
        peer=peer,
        peer_measured=f"{_num(theirs)} {unit}" + (f" ({note})" if note else ""),
        ratio=ratio,
        target=f"≥ {need:g}x" if need is not None else "",
        status=verdict(ratio, need),
    )


def bound(
    group: str,
    operation: str,
    value: float,
    unit: str,
    limit: float | None,
    *,
    at_most: bool = True,
    stats: Stats | None = None,
    peer: str = "",
    peer_measured: str = "",
) -> Row:
    """An absolute target: ``value <= limit`` (or ``>=`` with ``at_most=False``)."""
    status = verdict(value, limit, at_most=at_most)
    target = "" if limit is None else f"{'≤' if at_most else '≥'} {_num(limit)} {unit}"
    return Row(
        group,
        operation,
        f"{_num(value)} {unit}",
        stats.median_us if stats else None,
        stats.p99_us if stats else None,
        peer,
        peer_measured,
        None,
        target,
        status,
    )


def info(group: str, operation: str, stats: Stats, *, unit: str = "ops/s") -> Row:
    """A measurement reported for context, with no target."""
    return Row(group, operation, _rate(stats, unit), stats.median_us, stats.p99_us)


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _us(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def markdown(rows: Sequence[Row]) -> str:
    """The rows as one markdown table."""
    lines = [
        "| group | operation | sowlib | p50 µs/op | p99 µs/op | peer | peer measured"
        " | ratio | target | result |",
        "|---|---|---:|---:|---:|---|---|---:|---|---|",
    ]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        status = f"**{r.status}**" if r.status == "MISS" else r.status
        lines.append(
            f"| {r.group} | {r.operation} | {r.measured} | {_us(r.median_us)} | {_us(r.p99_us)}"
            f" | {r.peer} | {r.peer_measured} | {ratio} | {r.target} | {status} |"
        )
    return "\n".join(lines)
