"""A view maintained through any publishes, deletes and expirations equals the aggregate
recomputed from scratch over the underlying topic (exact arithmetic as the reference)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sowlib import SowStore
from tests.conftest import FakeClock

PROJECTION = [
    "/g",
    "SUM(/v) AS /sum",
    "COUNT(/v) AS /count",
    "COUNT(*) AS /records",
    "AVG(/v) AS /avg",
    "MIN(/v) AS /min",
    "MAX(/v) AS /max",
    "STDDEV_POP(/v) AS /sdp",
    "STDDEV_SAMP(/v) AS /sds",
    "COUNT_DISTINCT(/v) AS /distinct",
]
FILTER = "/skip IS NULL"

values = st.one_of(
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.integers(-50, 50).map(str),
    st.none(),
    st.just("missing"),
)


def _number(v: Any) -> Any:
    """The reference's reading of a generated value (None: not counted)."""
    if v is None or v == "missing":
        return None
    if isinstance(v, str):
        return int(v)
    return v


def reference_rows(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for doc in docs:
        groups.setdefault(doc.get("g"), []).append(doc)
    out = []
    for g, members in groups.items():
        nums = [n for n in (_number(d.get("v")) for d in members) if n is not None]
        row: dict[str, Any] = {"count": len(nums), "records": len(members)}
        if g is not None:
            row["g"] = g
        raw = [d["v"] for d in members if d.get("v") is not None]
        row["distinct"] = len(set(raw))  # by value: "5" and 5 differ, 1 and 1.0 do not
        if nums:
            exact = sum((Fraction(n) for n in nums), Fraction(0))
            floats = any(isinstance(n, float) for n in nums)
            row["sum"] = float(exact) if floats else int(exact)
            row["avg"] = float(exact / len(nums))
            present = [d["v"] for d in members if _number(d.get("v")) is not None]
            row["min"], row["max"] = min(present, key=float), max(present, key=float)
            mean = exact / len(nums)
            var = sum(((Fraction(n) - mean) ** 2 for n in nums), Fraction(0))
            row["sdp"] = math.sqrt(float(var / len(nums)))
            if len(nums) > 1:
                row["sds"] = math.sqrt(float(var / (len(nums) - 1)))
        out.append(row)
    return out


def canonical(rows: list[dict[str, Any]]) -> list[str]:
    # MIN and MAX of equal values of two types (0 and 0.0) may be either: compare them as floats
    tied = ("min", "max")
    return sorted(
        repr(sorted((k, float(v) if k in tied else v) for k, v in r.items())) for r in rows
    )


class ViewVsRecompute(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.store = SowStore(clock=self.clock)
        self.source = self.store.create_topic("orders", keys=["/id"], expiration="1h")
        self.view = self.store.create_view(
            "stats", "orders", projection=PROJECTION, grouping=["/g"], filter=FILTER
        )

    @rule(
        key=st.integers(0, 12),
        group=st.sampled_from(["a", "b", "c", None]),
        value=values,
        skip=st.booleans(),
        ttl=st.one_of(st.none(), st.integers(1, 30)),
    )
    def publish(self, key: int, group: str | None, value: Any, skip: bool, ttl: int | None) -> None:
        doc: dict[str, Any] = {"id": key}
        if group is not None:
            doc["g"] = group
        if value != "missing":
            doc["v"] = value
        if skip:
            doc["skip"] = 1
        self.source.publish(doc, expiration=ttl)

    @rule(key=st.integers(0, 12))
    def delete(self, key: int) -> None:
        self.source.sow_delete(f"/id = {key}")

    @rule(seconds=st.integers(1, 20))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.store.process_expirations()

    @invariant()
    def agrees(self) -> None:
        got = [r.doc for r in self.view.sow()]
        expected = reference_rows([r.doc for r in self.source.sow(FILTER)])
        assert canonical(got) == canonical(expected)

    def teardown(self) -> None:
        self.store.close()


TestViewVsRecompute = ViewVsRecompute.TestCase


class JoinVsRecompute(RuleBasedStateMachine):
    """A join view (inner or left) against the join and aggregate recomputed from scratch."""

    def __init__(self) -> None:
        super().__init__()
        self.store = SowStore()
        self.orders = self.store.create_topic("orders", keys=["/id"])
        self.companies = self.store.create_topic("companies", keys=["/ticker"])
        projection = ["[companies].[/sector]", "SUM([orders].[/qty]) AS /qty", "COUNT(*) AS /n"]
        self.views = {
            outer: self.store.create_view(
                f"v-{outer}",
                join=f"[orders].[/sym] {op} [companies].[/ticker]",
                projection=projection,
                grouping=["[companies].[/sector]"],
            )
            for outer, op in (("inner", "="), ("left", "LEFT JOIN"))
        }

    @rule(
        key=st.integers(0, 8),
        sym=st.sampled_from(["A", "B", "C", None]),
        qty=st.integers(0, 9),
    )
    def order(self, key: int, sym: str | None, qty: int) -> None:
        doc: dict[str, Any] = {"id": key, "qty": qty}
        if sym is not None:
            doc["sym"] = sym
        self.orders.publish(doc)

    @rule(ticker=st.sampled_from(["A", "B", "C"]), sector=st.sampled_from(["x", "y"]))
    def company(self, ticker: str, sector: str) -> None:
        self.companies.publish({"ticker": ticker, "sector": sector})

    @rule(key=st.integers(0, 8))
    def drop_order(self, key: int) -> None:
        self.orders.sow_delete(f"/id = {key}")

    @rule(ticker=st.sampled_from(["A", "B", "C"]))
    def drop_company(self, ticker: str) -> None:
        self.companies.sow_delete(f"/ticker = '{ticker}'")

    @invariant()
    def agrees(self) -> None:
        companies = {r.doc["ticker"]: r.doc for r in self.companies.sow()}
        for outer, view in self.views.items():
            groups: dict[Any, list[int]] = {}
            for order in (r.doc for r in self.orders.sow()):
                company = companies.get(order.get("sym")) if "sym" in order else None
                if company is None and outer == "inner":
                    continue
                sector = None if company is None else company["sector"]
                groups.setdefault(sector, []).append(order["qty"])
            expected = []
            for sector, qtys in groups.items():
                row: dict[str, Any] = {"qty": sum(qtys), "n": len(qtys)}
                if sector is not None:
                    row["sector"] = sector
                expected.append(row)
            assert canonical([r.doc for r in view.sow()]) == canonical(expected), outer

    def teardown(self) -> None:
        self.store.close()


TestJoinVsRecompute = JoinVsRecompute.TestCase
