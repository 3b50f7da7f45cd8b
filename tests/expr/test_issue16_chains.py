"""Issue 16: long AND/OR/arithmetic chains pickle and copy without recursing per clause.

Spark ships filters to its executors by pickling them; a chain of thousands of
clauses once raised RecursionError (the AST) or did not pickle at all (a Filter's
compiled closures).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from sowlib.expr import Filter, compile_filter, parse_filter
from sowlib.expr.nodes import And, Arith, Compare, Or, walk
from sowlib.paths import FieldPath

CLAUSES = 5_000

LONG = {
    "AND": " AND ".join(f"/a != {i}" for i in range(CLAUSES)),
    "OR": " OR ".join(f"/a = {i}" for i in range(CLAUSES)),
}

DOCS: list[Any] = [
    {"a": 0},
    {"a": 7},
    {"a": CLAUSES - 1},
    {"a": CLAUSES},
    {"a": -1},
    {"a": "7"},
    {"a": "x"},
    {"a": None},
    {},
    "not a document",
]
MATCHES = {
    "AND": [False, False, False, True, True, False, True, False, False, False],
    "OR": [True, True, True, False, False, True, False, False, False, False],
}


def _positions(node: Any) -> list[tuple[str, int, int]]:
    return [(type(n).__name__, n.start, n.end) for n in walk(node)]


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_issue16_long_chain_filter_pickles(op: str) -> None:
    f = compile_filter(LONG[op])
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        g = pickle.loads(pickle.dumps(f, protocol=protocol))
        assert isinstance(g, Filter)
        assert g == f
        assert hash(g) == hash(f)
        assert g.text == f.text
        assert g.node == f.node
        assert [g.matches(d) for d in DOCS] == [f.matches(d) for d in DOCS]
    assert [f.matches(d) for d in DOCS] == MATCHES[op]


@pytest.mark.parametrize("op", ["AND", "OR"])
def test_issue16_long_chain_ast_pickles_and_copies(op: str) -> None:
    node = parse_filter(LONG[op])
    assert isinstance(node, And if op == "AND" else Or)
    for clone in (pickle.loads(pickle.dumps(node)), copy.deepcopy(node), copy.copy(node)):
        assert type(clone) is type(node)
        assert clone == node
        assert hash(clone) == hash(node)
    assert _positions(pickle.loads(pickle.dumps(node))) == _positions(node)


def test_issue16_long_arithmetic_chain_pickles() -> None:
    total = " - ".join(f"{i} * /y" if i % 3 == 0 else str(i) for i in range(CLAUSES))
    f = compile_filter(f"/x = {total}")
    assert isinstance(f.node, Compare)
    assert isinstance(f.node.right, Arith)
    g = pickle.loads(pickle.dumps(f))
    assert g == f
    assert g.node == f.node
    assert _positions(g.node) == _positions(f.node)
    value = compile_filter(total).evaluate({"y": 2})
    docs = [{"x": value, "y": 2}, {"x": value, "y": 1}, {"y": 2}, {}]
    assert [g.matches(d) for d in docs] == [True, False, False, False]
    assert [g.evaluate(d) for d in docs] == [f.evaluate(d) for d in docs]


def test_issue16_short_filters_pickle_with_positions_and_fields() -> None:
    texts = [
        "/a = 1",
        "/a[1]/@x + 1 - /b * 2 % 3 > (1 - 2) AND (/c OR NOT /d)",
        "(/a = 1 AND /b = 2) OR (/c = 3 AND (/d = 4 OR /e IN (1, 2)))",
        "/s LIKE 'ab%' AND /t BETWEEN -1 AND 2.5 OR UPPER(/u) = 'X'",
    ]
    for text in texts:
        f = compile_filter(text)
        g = pickle.loads(pickle.dumps(f))
        assert g == f
        assert g.node == f.node
        assert g.fields == f.fields
        assert _positions(g.node) == _positions(f.node)
    path = FieldPath.parse("/order/items[2]/price")
    copied = pickle.loads(pickle.dumps(path))
    assert copied == path
    assert copied.resolve({"order": {"items": [0, 1, {"price": 5}]}}) == 5
