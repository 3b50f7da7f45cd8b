"""The column evaluator agrees with the closures and the reference interpreter."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sowlib.columns import select_docs, vector_filter
from sowlib.columns.store import ColumnStore
from sowlib.expr import parse_filter
from sowlib.expr.interp import evaluate
from sowlib.expr.nodes import (
    And,
    BeginsWith,
    Between,
    Compare,
    Field,
    InList,
    IsNaN,
    IsNull,
    Like,
    Literal,
    Node,
    Not,
    Or,
)
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node
from sowlib.paths import parse_path
from tests.expr.strategies import documents, nodes, patterns

# values that make the comparison rules differ by kind: numeric text, huge and
# boundary integers, booleans, NaN and infinities, empty text, arrays, objects
tricky = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**63, 2**64 - 1, -(2**63)]),
    st.sampled_from([0.0, -0.0, 0.5, 2.5, 1e300, float("nan"), float("inf"), -float("inf")]),
    st.sampled_from(["", "1", "01", "2.5", "1e3", " 1", "abc", "B", "a", "-3", "9007199254740993"]),
    st.lists(st.sampled_from([1, "a", None, 2.5]), max_size=2),
    st.fixed_dictionaries({"b": st.sampled_from([1, "x"])}),
)
FIELDS = ["/x", "/y", "/a/b"]
nested = st.one_of(tricky, st.fixed_dictionaries({"b": tricky}))
flat_docs = st.fixed_dictionaries({}, optional={"x": tricky, "y": tricky, "a": nested})
literal_values = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([2**53, 2**53 + 1, 2**63, 0.5, -0.0, 1e300]),
    st.sampled_from(["1", "2.5", "abc", "B", "01", "1e3", "-3"]),
)
field = st.sampled_from(FIELDS).map(lambda p: Field(parse_path(p)))
lit = literal_values.map(Literal)
ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])

pytest.importorskip("numpy", reason="the column engine needs numpy")


def _predicate() -> st.SearchStrategy[Node]:
    items = st.lists(lit, min_size=1, max_size=3).map(tuple)
    return st.one_of(
        st.builds(Compare, ops, field, lit),
        st.builds(Compare, ops, lit, field),
        st.builds(Between, field, lit, lit, st.booleans()),
        st.builds(InList, field, items, st.booleans()),
        st.builds(Like, field, patterns, st.booleans(), st.booleans()),
        st.builds(BeginsWith, field, items, st.booleans()),
        st.builds(IsNull, field, st.booleans()),
        st.builds(IsNaN, field, st.booleans()),
        field,  # a bare field as a condition: TRUE, FALSE or NULL
        st.builds(Compare, ops, field, field),  # two fields: no vector program
    )


logic = st.recursive(
    _predicate(),
    lambda c: st.one_of(st.builds(And, c, c), st.builds(Or, c, c), c.map(Not)),
    max_leaves=6,
)


def _reference(node: Node, docs: list[Any]) -> list[int]:
    closures = compile_node(node)
    got = [i for i, d in enumerate(docs) if truthy(closures(d, None))]
    assert got == [i for i, d in enumerate(docs) if truthy(evaluate(node, d, None))]
    return got


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(node=logic, docs=st.lists(flat_docs, max_size=12))
def test_logic_over_tricky_values_agrees(node: Node, docs: list[dict[str, Any]]) -> None:
    got = select_docs(node, docs)
    two_fields = any(
        isinstance(n, Compare) and isinstance(n.left, Field) and isinstance(n.right, Field)
        for n in _walk(node)
    )
    assert (got is None) == (two_fields and not _same_field_only(node))
    if got is not None:
        assert got == _reference(node, docs)


def _walk(node: Node) -> list[Node]:
    from sowlib.expr.nodes import walk

    return walk(node)


def _same_field_only(node: Node) -> bool:
    """Every two-field comparison in ``node`` compares a field with itself."""
    return all(
        n.left == n.right
        for n in _walk(node)
        if isinstance(n, Compare) and isinstance(n.left, Field) and isinstance(n.right, Field)
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(node=nodes, docs=st.lists(documents(), max_size=8))
def test_any_generated_filter_agrees_when_it_has_a_program(
    node: Node, docs: list[dict[str, Any]]
) -> None:
    got = select_docs(node, docs)
    assume(got is not None)
    assert got == _reference(node, docs)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    node=logic,
    first=st.lists(flat_docs, min_size=1, max_size=12),
    later=st.lists(st.tuples(st.integers(0, 15), st.one_of(st.none(), flat_docs)), max_size=20),
)
def test_store_after_updates_and_deletes_agrees(
    node: Node, first: list[dict[str, Any]], later: list[tuple[int, dict[str, Any] | None]]
) -> None:
    flt = vector_filter(node)
    assume(flt is not None)
    assert flt is not None
    store = ColumnStore()
    paths = [parse_path(p) for p in FIELDS]
    live = dict(enumerate(first))
    for path in paths:
        store.add_column(path, ((k, path.getter(d)) for k, d in live.items()))
    for key, doc in later:
        if doc is None:
            store.delete(key)
            live.pop(key, None)
        else:
            store.put(key, [p.getter(doc) for p in paths])
            live[key] = doc
    keys = list(live)
    expected = {keys[i] for i in _reference(node, [live[k] for k in keys])}
    assert set(store.select(flt)) == expected
    assert store.live == len(live)


def test_common_shapes_compile_to_a_program() -> None:
    for text in [
        "(/price > 100 AND /side = 'B') OR /region IN ('EU','APAC')",
        "/qty BETWEEN 1 AND 5 AND NOT (/status = 'x')",
        "/venue LIKE '^X' OR /tif IS NULL OR UPPER(/cur) = 'USD'",
        "/flag AND /x * 2 > 3",
        "1 = 1 AND /a = 2",
    ]:
        flt = vector_filter(parse_filter(text))
        assert flt is not None, text
        assert flt.fields


def test_two_fields_in_a_clause_or_context_functions_have_no_program() -> None:
    for text in ["/a > /b", "/a + /b = 1", "SOW_KEY() = '1'", "/a = 1 OR UNIX_TIMESTAMP() > 5"]:
        assert vector_filter(parse_filter(text)) is None, text


def test_dictionary_drops_values_no_row_holds_and_answers_stay_right() -> None:
    path = parse_path("/x")
    store = ColumnStore()
    store.add_column(path, [(0, "keep"), (1, 5)])
    flt = vector_filter(parse_filter("/x LIKE 'e' OR /x = 5"))
    assert flt is not None
    assert set(store.select(flt)) == {0, 1}  # answers cached for this generation
    for i in range(5000):
        store.put(1, [f"v{i}"])  # every value new: the dictionary must be renumbered
    column = store.column(path)
    assert column.generation > 0
    assert len(column.values) <= 2 * store.live + 1024
    store.put(2, ["free"])
    store.put(3, [-0.0])
    store.put(4, [0.0])
    assert set(store.select(flt)) == {0, 2}
    minus = vector_filter(parse_filter("1 / /x < 0"))
    assert minus is not None
    assert store.select(minus) == [3]  # 1 / -0.0 is -inf: -0.0 is not one number with 0.0


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    node=logic,
    steps=st.lists(
        st.tuples(st.integers(0, 2**64 - 1), st.one_of(st.none(), flat_docs)), max_size=30
    ),
)
def test_a_store_over_the_key_table_agrees_with_one_over_a_dict(
    node: Node, steps: list[tuple[int, dict[str, Any] | None]]
) -> None:
    from sowlib.topic.slots import new_slots

    flt = vector_filter(node)
    assume(flt is not None)
    assert flt is not None
    paths = [parse_path(p) for p in FIELDS]
    plain, table = ColumnStore(), ColumnStore(new_slots(True), int_keys=True)
    for store in (plain, table):
        for path in paths:
            store.add_column(path, [])
    keys = [k for k, _ in steps]
    for key, doc in [*steps, *((k, {"x": k % 7}) for k in keys[::3])]:
        for store in (plain, table):
            if doc is None:
                store.delete(key)
            else:
                store.put(key, [p.getter(doc) for p in paths])
    assert table.live == plain.live
    assert set(table.select(flt)) == set(plain.select(flt))


one_kind = st.one_of(
    st.lists(st.integers(-(2**60), 2**60), max_size=20),
    st.lists(st.integers(-4, 4), max_size=20),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20),
    st.lists(st.floats(-2.0, 2.0, allow_nan=False), max_size=20),
    st.lists(st.sampled_from(["", "a", "B", "1", "EU"]), max_size=20),
    st.lists(tricky, max_size=20),
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(first=one_kind, second=one_kind)
def test_a_batch_stores_what_one_value_at_a_time_stores(
    first: list[Any], second: list[Any]
) -> None:
    # set_many's passes for batches of one kind (ints, floats, known text) vs set
    import numpy as np

    from sowlib.columns.column import Column, entry_key

    path = parse_path("/x")
    size = max(len(first), len(second), 1)
    batch, single = Column(path, size), Column(path, size)
    batch.rows = single.rows = size
    for values in (first, second):  # the second batch overwrites rows of the first
        rows = np.arange(len(values), dtype=np.intp)
        batch.set_many(rows, values)
        for row, value in enumerate(values):
            single.set(row, value)
        for row in range(size):
            held, want = batch.value(row), single.value(row)
            assert entry_key(held) == entry_key(want), (row, held, want)
            assert (int(batch.code[row]) < 0) == (int(single.code[row]) < 0)


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(
    node=logic,
    batches=st.lists(
        st.tuples(
            st.lists(st.tuples(st.one_of(st.integers(0, 12), st.sampled_from(["a", "b"])),
                               flat_docs), max_size=8),
            st.lists(st.one_of(st.integers(0, 12), st.sampled_from(["a", "b"])), max_size=4),
        ),
        max_size=6,
    ),
)  # fmt: skip
def test_batches_agree_with_one_put_at_a_time(
    node: Node, batches: list[tuple[list[tuple[Any, dict[str, Any]]], list[Any]]]
) -> None:
    # put_many (new keys allotted at once, free rows reused, a key repeated in a batch
    # keeps its last values, int and text keys) = put one at a time = the closures
    flt = vector_filter(node)
    assume(flt is not None)
    assert flt is not None
    paths = [parse_path(p) for p in FIELDS]
    many, single = ColumnStore(), ColumnStore()
    for store in (many, single):
        for path in paths:
            store.add_column(path, [])
    live: dict[Any, dict[str, Any]] = {}
    for puts, deletes in batches:
        keys = [k for k, _d in puts]
        many.put_many(keys, [[p.getter(d) for _k, d in puts] for p in paths])
        for key, doc in puts:
            single.put(key, [p.getter(doc) for p in paths])
            live[key] = doc
        for key in deletes:
            many.delete(key)
            single.delete(key)
            live.pop(key, None)
    keys = list(live)
    expected = {keys[i] for i in _reference(node, [live[k] for k in keys])}
    assert set(many.select(flt)) == set(single.select(flt)) == expected
    assert many.live == single.live == len(live)
