"""A filter that is one equality or IN of literals is planned from the shape its
compiled form keeps (``Filter.equality``: the planner takes its one clause and its
equality from it, with no walk of the tree): the plan must be
the one the general rules make from its tree (same kind, index, estimate, count,
description, candidates and unsure keys), and the query must return what testing every
record gives, for values of every kind (numbers and numeric strings, NULL, missing
fields, arrays, objects) across writes, deletes, reopens and a read-only follower.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import attrs
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.expr import compile_filter
from sowlib.expr.nodes import Node
from sowlib.expr.shape import equality_shape
from sowlib.index.clauses import equality
from sowlib.index.planner import Plan, plan
from sowlib.paths import FieldPath

_MISSING = object()
#: The plans that change nothing (a scan or a memo probe notes or builds what the next
#: query of the field reads).
_LOOKUPS = frozenset(("hash", "key_fields"))
VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 2.0, -1.0, 1e20, True, False]),
    st.sampled_from(["1", "05", "2.0", "-1", "x", "", "1e2", " 1"]),
    st.sampled_from([None, _MISSING, [1, "x"], [], {"a": 1}]),
)
DOCS = st.tuples(st.integers(0, 9), VALUES, VALUES)
LITERALS = st.sampled_from(
    ["1", "-1", "2", "2.0", "0.5", "1e20", "'1'", "'05'", "'2.0'", "'x'", "''", "NULL", "'-1'"]
)


@st.composite
def filters(draw: Any) -> str:
    """``/f = lit``, ``lit = /f`` or ``/f IN (lits)`` on the hash-indexed, the key or an
    unindexed field (and a few shapes that are not one equality)."""
    field = draw(st.sampled_from(["/v", "/k", "/w"]))
    lits = draw(st.lists(LITERALS, min_size=1, max_size=4))
    form = draw(st.sampled_from(["eq", "flipped", "in", "not in", "and"]))
    if form == "eq":
        return f"{field} = {lits[0]}"
    if form == "flipped":
        return f"{lits[0]} = {field}"
    if form == "in":
        return f"{field} IN ({', '.join(lits)})"
    if form == "not in":
        return f"{field} NOT IN ({', '.join(lits)})"
    return f"{field} = {lits[0]} AND /v = {lits[-1]}"


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(DOCS, min_size=1, max_size=5)),
        st.tuples(st.just("delete"), st.integers(0, 9)),
        st.tuples(st.sampled_from(["reopen", "refresh"]), st.none()),
    ),
    min_size=1,
    max_size=10,
)


@attrs.frozen
class _Tree:
    """A filter as the general rules see it: its tree only (no kept shape)."""

    node: Node


def _doc(i: int, v: Any, w: Any) -> bytes:
    doc: dict[str, Any] = {"k": i}
    if v is not _MISSING:
        doc["v"] = v
    if w is not _MISSING:
        doc["w"] = w
    return orjson.dumps(doc)


def _seen(found: Plan) -> tuple[Any, ...]:
    cands = found.candidates()
    return (
        found.describe(),
        found.kind,
        found.index,
        found.estimated,
        found.count,
        found.exact,
        None if cands is None else sorted(cands, key=str),
        sorted(found.unsure(), key=str),
    )


def _check(topic: Any, texts: list[str]) -> None:
    source = topic._p.source
    every = topic.sow()
    for text in texts:
        flt = compile_filter(text)
        assert flt.equality == equality_shape(flt.node)
        got = equality(flt.node)
        assert (got is None) == (flt.equality is None)
        if got is not None and flt.equality is not None:
            assert (got[0], tuple(got[1])) == flt.equality
        general = _seen(plan(source, _Tree(flt.node)))
        lean = _seen(plan(source, flt))  # (a kept plan is not asked for here)
        if {general[1], lean[1]} & _LOOKUPS:  # (other plans note scans: the next differs)
            assert lean == general, text
            assert topic.explain(text).describe() == lean[0]
        want = sorted((r.sow_key, r.data) for r in every if flt.matches(r.doc))
        for _ in range(2):
            assert sorted((r.sow_key, r.data) for r in topic.sow(text)) == want, text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, texts=st.lists(filters(), min_size=1, max_size=6))
def test_lean_plans_are_the_general_plans(
    tmp_path_factory: Any, ops: list[Any], texts: list[str]
) -> None:
    directory: Path = tmp_path_factory.mktemp("lean")
    with contextlib.ExitStack() as stack:
        with SowStore(directory) as first:
            topic = first.create_topic("t", keys=["/k"], hash_indexes=[["/v"]], indexes=["/w"])
            topic.publish_many([_doc(i, i % 3, str(i)) for i in range(8)])
        reader = stack.enter_context(SowStore(directory, readonly=True))
        follower = reader.topic("t")
        _check(follower, texts)
        store = stack.enter_context(SowStore(directory))
        topic = store.topic("t")
        for op, arg in ops:
            if op == "put":
                topic.publish_many([_doc(*doc) for doc in arg])
            elif op == "delete":
                topic.sow_delete_by_keys([topic.key_for({"k": arg})])
            elif op == "reopen":
                store.close()
                store = stack.enter_context(SowStore(directory))
                topic = store.topic("t")
            else:
                store.flush()
                reader.refresh()
                _check(follower, texts)
            _check(topic, texts)


def test_the_kept_shape() -> None:
    path = FieldPath.parse("/a")
    assert compile_filter("/a = 1").equality == (path, (1,))
    assert compile_filter("'x' = /a").equality == (path, ("x",))
    assert compile_filter("/a IN (1, -2, NULL)").equality == (path, (1, -2, None))
    for text in ("/a = /b", "/a NOT IN (1)", "/a = 1 AND /b = 2", "/a > 1", "/a = 1 + 1"):
        assert compile_filter(text).equality is None, text


def test_an_equality_on_an_indexed_field_is_a_lookup(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/k"], hash_indexes=[["/v"]])
        topic.publish_many([_doc(i, i % 3, _MISSING) for i in range(9)])
        source = topic._p.source
        lookups = (("/v = 1", "hash"), ("/v IN (1, '2')", "hash"), ("/k = 4", "key_fields"))
        for text, kind in lookups:
            flt = compile_filter(text)
            assert plan(source, flt).kind == kind
            assert _seen(plan(source, flt)) == _seen(plan(source, _Tree(flt.node)))
        assert topic.explain("/v = 1").describe() == "hash hash(/v) [/v = 1] at most 3 candidates"
        assert len(topic.sow("/v IN (1, '2')")) == 6
