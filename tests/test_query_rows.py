"""What a query returns = its reference: every stored document tested with the filter, the
matches sorted with ``OrderBy.sort_key`` (ties by SOW key), then skip and top.

Covers the fast paths of the pipeline against it: exact index answers taken without
running the filter (a hash-index equality, a memo range), rows read in one batch,
ordered pages sorted on field values read out of the bytes, a memo walk for a page.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.expr import compile_filter
from sowlib.query import OrderBy

# Values of /v and /s: numbers of both kinds, numeric and other text, NULL, arrays,
# objects, booleans; "missing" leaves the field out.
VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 2.0, -1.5, 1e20]),
    st.sampled_from(["a", "B", "2", "2.0", "", "x y"]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-2, 2), max_size=2),
    st.just({"n": 1}),
    st.just("missing"),
)
DOCS = st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=25)
LITERALS = st.sampled_from(["1", "2", "-1", "0.5", "'a'", "'2'", "'B'", "NULL"])
FILTERS = st.one_of(
    st.builds(lambda lit: f"/s = {lit}", LITERALS),
    st.builds(lambda lit: f"/v = {lit}", LITERALS),
    st.builds(lambda a, b: f"/v BETWEEN {a} AND {b}", st.integers(-3, 3), st.integers(-3, 3)),
    st.builds(lambda op, lit: f"/v {op} {lit}", st.sampled_from(["<", "<=", ">", ">="]), LITERALS),
    st.builds(lambda lit: f"/s IN ({lit}, 'a')", LITERALS),
    st.builds(lambda lit: f"/v = {lit} AND /s IS NOT NULL", LITERALS),
    st.just("/v IS NULL"),
)
ORDERS = st.sampled_from([None, "/v", "/v DESC", "/s, /v DESC", "/v TEXT", "/s DESC TEXT, /id"])


def _doc(i: int, v: Any, s: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": i}
    if v != "missing":
        doc["v"] = v
    if s != "missing":
        doc["s"] = s
    return doc


def _reference(
    rows: list[tuple[str, dict[str, Any]]],
    text: str | None,
    order_by: str | None,
    top: int | None,
    skip: int | None,
) -> list[str]:
    flt = None if text is None else compile_filter(text)
    found = [(k, d) for k, d in rows if flt is None or flt.matches(d)]
    if order_by is None:
        found.sort(key=lambda p: p[0])  # a paged query without order_by: by SOW key
    else:
        order = OrderBy.parse(order_by)
        found.sort(key=lambda p: order.sort_key(p[1], p[0]))
    keys = [k for k, _ in found]
    start = skip or 0
    return keys[start:] if top is None else keys[start : start + top]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=DOCS,
    queries=st.lists(
        st.tuples(
            st.one_of(st.none(), FILTERS),
            ORDERS,
            st.one_of(st.none(), st.integers(0, 6)),
            st.one_of(st.none(), st.integers(0, 3)),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_indexed_and_ordered_queries_equal_the_reference(
    tmp_path: Path, docs: list[tuple[Any, Any]], queries: list[Any]
) -> None:
    counter = next(_STORES)
    with SowStore(str(tmp_path / f"s{counter}")) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/v"])
        t.sow("/s = 'warm-up'")  # indexes maintained from here on
        t.publish_many([_doc(i, v, s) for i, (v, s) in enumerate(docs)])
        t.publish(_doc(0, *docs[-1]))  # one key updated after the batch
        rows = [(r.sow_key, r.doc) for r in t.sow()]
        for text, order_by, top, skip in queries:
            skip = skip if top is not None else None
            got = t.sow(text, order_by=order_by, top_n=top, skip_n=skip)
            want = _reference(rows, text, order_by, top, skip)
            if order_by is None and not skip and top is None:
                assert sorted(r.sow_key for r in got) == sorted(want), text
            elif order_by is None and not skip:
                assert len(got) == len(want)
                assert {r.sow_key for r in got} <= {k for k, _ in rows}
            else:
                assert [r.sow_key for r in got] == want, (text, order_by, top, skip)
            stored = dict(rows)
            for rec in got:
                assert rec.doc == stored[rec.sow_key]
                assert rec == t.get(rec.sow_key)


_STORES = itertools.count()


def test_the_equality_and_range_above_are_answered_exactly_by_their_indexes(
    tmp_path: Path,
) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/v"])
        t.publish_many([_doc(i, i % 10, f"k{i % 3}") for i in range(40)])
        for text, kind in [("/s = 'k1'", "hash"), ("/v BETWEEN 1 AND 2", "memo")]:
            plan = t.explain(text)
            assert (plan.kind, plan.exact) == (kind, True)
            assert sorted(r.sow_key for r in t.sow(text)) == _reference(
                [(r.sow_key, r.doc) for r in t.sow()], text, None, None, None
            )
