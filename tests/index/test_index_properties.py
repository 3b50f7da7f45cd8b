"""Indexes are invisible: any query through the planner equals a brute-force scan (spec §7 [R])."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sowlib.index.planner
import sowlib.query.pipeline
from sowlib.query import QueryOptions, run_query
from tests.index.fakes import FakeSource, compile_filter

# Small vocabularies dense in the cases where text and comparison rules disagree.
SCALARS = [1, 5, 10, 2.5, 3.0, -1, 2**60, "05", "5", "3.0", "1e1", "-1", "2.5",
           "a", "ab", "B", "n1", "", True, None]  # fmt: skip
LITERALS = [5, 3, 10, 2.5, -1, "05", "5", "3", "10", "a", "ab", "B", None]
PREFIXES = ["a", "ab", "n", "1", "-", "B", "5"]
PATTERNS = ["^a.", "^ab?", "^n|a", "^1+", "^-1", "a", "^5$", "^B*"]
FIELDS = ["/a", "/a", "/a", "/b", "/c", "/id"]  # /a carries every index kind

scalar = st.sampled_from(SCALARS) | st.just(float("nan"))
value = scalar | st.lists(scalar, min_size=0, max_size=3)
key_value = st.sampled_from([*range(12), "07", "7", "x", 2.5])


_PRESENT = st.integers(0, 5)


@st.composite
def documents(draw: st.DrawFn, values: st.SearchStrategy[Any] = value) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": draw(key_value)}
    for name in ("a", "b", "c"):
        if draw(_PRESENT):
            doc[name] = draw(values)
    return doc


def _lit(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return f"'{v}'"
    return repr(v)


_FIELD = st.sampled_from(FIELDS)
_LIT = st.sampled_from([_lit(v) for v in LITERALS])
_LITS = st.lists(_LIT, min_size=1, max_size=3)
_KIND = st.integers(0, 9)
_OP = st.sampled_from(["<", "<=", ">", ">=", "!="])
_PREFIX = st.sampled_from(PREFIXES)
_PATTERN = st.sampled_from(PATTERNS)


@st.composite
def atoms(draw: st.DrawFn) -> str:
    f = draw(_FIELD)
    lit = _LIT
    kind = draw(_KIND)
    if kind == 0:
        return f"{f} = {draw(lit)}"
    if kind == 1:
        return f"{f} IN ({', '.join(draw(_LITS))})"
    if kind == 2:
        return f"{f} BETWEEN {draw(lit)} AND {draw(lit)}"
    if kind == 3:
        op = draw(_OP)
        return f"{f} {op} {draw(lit)}"
    if kind == 4:
        return f"{f} LIKE '^{draw(_PREFIX)}'"
    if kind == 5:
        return f"{f} BEGINS WITH ('{draw(_PREFIX)}')"
    if kind == 6:
        return f"{draw(lit)} < {f}"
    if kind == 7:
        return f"{f} IS NULL"
    if kind == 8:
        return f"{f} LIKE '{draw(_PATTERN)}'"
    return f"{f} = {draw(lit)}"


def filters(depth: int = 2) -> st.SearchStrategy[str]:
    if depth == 0:
        return atoms()
    sub = filters(depth - 1)
    return st.one_of(
        atoms(),
        atoms(),
        st.tuples(atoms(), atoms()).map(lambda t: f"{t[0]} AND {t[1]}"),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) AND ({t[1]})"),
        st.tuples(atoms(), atoms(), atoms()).map(lambda t: " AND ".join(t)),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) OR ({t[1]})"),
        sub.map(lambda t: f"NOT ({t})"),
    )


ORDERS = [None, "/a", "/a DESC", "/a DESC, /b", "/a, /id DESC", "/b ASC, /a DESC", "/a TEXT",
          "/c DESC TEXT", "/id"]  # fmt: skip

operations = st.lists(
    st.one_of(
        documents().map(lambda d: ("put", d)),
        key_value.map(lambda k: ("delete", k)),
    ),
    min_size=5,
    max_size=60,
)


# Only plain scalars: memo(/a) stays orderable, so top_n + order_by walks it.
scalar_operations = st.lists(
    st.one_of(
        documents(st.sampled_from(SCALARS)).map(lambda d: ("put", d)),
        key_value.map(lambda k: ("delete", k)),
    ),
    min_size=5,
    max_size=60,
)


def _build(ops: list[tuple[str, Any]]) -> tuple[FakeSource, dict[str, Any]]:
    source = FakeSource(keys=["/id"], hash_indexes=[["/a"], ["/a", "/b"]], memo=["/a"])
    model: dict[str, Any] = {}
    for op, arg in ops:
        if op == "put":
            model[source.publish(arg)] = arg
        else:
            key = source.key_for_values([arg])
            assert key is not None
            assert source.delete(key) == (model.pop(key, None) is not None)
    return source, model


def _expected(
    model: dict[str, Any], text: str, options: QueryOptions
) -> tuple[list[str], list[str]]:
    """(all matching keys, the ordered page) by brute force."""
    flt = compile_filter(text)
    hits = [k for k, doc in model.items() if flt.matches(doc)]
    order = options.order_by
    skip = options.skip_n or 0
    if order is not None:
        hits.sort(key=lambda k: order.sort_key(model[k], k))
    elif skip:
        hits.sort()
    page = hits if options.top_n is None else hits[skip : skip + options.top_n]
    return hits, page


def _check(ops: list[tuple[str, Any]], text: str, order: str | None, top: int | None,
           skip: int | None) -> None:  # fmt: skip
    source, model = _build(ops)
    options = QueryOptions.make(order_by=order, top_n=top, skip_n=skip if top is not None else None)
    hits, page = _expected(model, text, options)
    for forced in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            if forced:
                # Use every index however unselective, and always walk memo(/a).
                mp.setattr(sowlib.index.planner, "_MEMO_MAX_FRACTION", float("inf"))
                mp.setattr(sowlib.index.planner, "_INTERSECT_RATIO", float("inf"))
                mp.setattr(sowlib.query.pipeline, "WALK_RATIO", 0)
            got = [r.sow_key for r in run_query(source, compile_filter(text), options)]
        if options.order_by is not None or options.skip_n:
            assert got == page
        elif options.top_n is None:
            assert sorted(got) == sorted(hits)
        else:
            assert len(got) == min(len(hits), options.top_n)
            assert set(got) <= set(hits)
    for index in source.indexes.hashes:
        index.check()


# Capped so the whole tests/index run stays well under a minute on a loaded machine.
@settings(max_examples=100)
@given(
    ops=operations,
    text=filters(),
    order=st.sampled_from(ORDERS),
    top=st.none() | st.integers(0, 6),
    skip=st.none() | st.integers(0, 4),
)
def test_indexed_query_equals_brute_force_scan(
    ops: list[tuple[str, Any]], text: str, order: str | None, top: int | None, skip: int | None
) -> None:
    _check(ops, text, order, top, skip)


@settings(max_examples=120)
@given(
    ops=operations,
    text=st.one_of(atoms(), st.tuples(atoms(), atoms()).map(" AND ".join)),
    order=st.sampled_from(ORDERS),
    top=st.none() | st.integers(1, 4),
)
# A LIKE pattern longer than its prefix: the memo prefix region is only a superset.
@example(ops=[("put", {"id": 0, "a": ["a"]}), ("put", {"id": 1})], text="/a LIKE '^a.'",
         order=None, top=None)  # fmt: skip
# BETWEEN with a NULL bound is never TRUE: its memo region is empty, not the other bound's.
@example(ops=[("put", {"id": 0, "a": "05"})], text="/a BETWEEN '05' AND NULL",
         order=None, top=None)  # fmt: skip
def test_single_clause_query_equals_brute_force_scan(
    ops: list[tuple[str, Any]], text: str, order: str | None, top: int | None
) -> None:
    _check(ops, text, order, top, None)


@settings(max_examples=100)
@given(
    ops=scalar_operations,
    text=st.one_of(st.just("/id IS NOT NULL"), atoms(), filters(1)),
    order=st.sampled_from(["/a", "/a DESC", "/a DESC, /b", "/a, /id DESC"]),
    top=st.integers(1, 5),
    skip=st.none() | st.integers(0, 3),
)
def test_memo_walk_for_top_n_equals_full_sort(
    ops: list[tuple[str, Any]], text: str, order: str, top: int, skip: int | None
) -> None:
    _check(ops, text, order, top, skip)


@settings(max_examples=50)
@given(ops=operations, text=filters(1))
def test_sow_keys_restriction_equals_scan_of_those_keys(
    ops: list[tuple[str, Any]], text: str
) -> None:
    source, model = _build(ops)
    wanted = [*sorted(model)[::2], "no-such-key"]
    flt = compile_filter(text)
    got = sorted(r.sow_key for r in run_query(source, flt, sow_keys=wanted))
    assert got == sorted(k for k in wanted if k in model and flt.matches(model[k]))


_FIELD_VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["a", "b", "05", "", "1e2"]),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=False, width=16),
    st.lists(st.sampled_from([1, "a", None]), max_size=3),
)


@given(
    docs=st.lists(
        st.fixed_dictionaries({}, optional={"id": _FIELD_VALUES, "g": _FIELD_VALUES}),
        max_size=20,
    )
)
def test_a_column_at_a_time_insert_equals_one_put_per_record(docs: list[dict[str, Any]]) -> None:
    from sowlib.index import IndexSet
    from sowlib.index.persist import dump_indexes, index_snapshot, load_indexes

    keys: list[Any] = list(range(len(docs)))
    one, many = (IndexSet(["/id"], [["/g"], ["/id", "/g"]], ["/g"]) for _ in range(2))
    for key, doc in zip(keys, docs, strict=True):
        one.on_put(key, None, doc)
    many.on_insert_many(keys, docs)
    assert index_snapshot(one) == index_snapshot(many)
    loaded = IndexSet(["/id"], [["/g"], ["/id", "/g"]], ["/g"])
    assert load_indexes(loaded, dump_indexes(one, keys), keys)
    assert index_snapshot(loaded) == index_snapshot(one)
    one.compact()
    assert index_snapshot(loaded) == index_snapshot(one)
