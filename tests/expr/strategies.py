"""Hypothesis strategies for filter ASTs (one per node type) and documents."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.nodes import (
    And,
    Arith,
    BeginsWith,
    Between,
    Call,
    Compare,
    EndsWith,
    Field,
    InList,
    IsNaN,
    IsNull,
    Like,
    Literal,
    Neg,
    Node,
    Not,
    Or,
)
from sowlib.paths import parse_path

NAMES = ["a", "b", "s", "n", "arr", "unit price"]
ints = st.integers(-(2**63), 2**64 - 1)
floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.sampled_from("ab1 .'\\\"\té\x00"), min_size=1, max_size=6).map(
    lambda s: s.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
)
fields = st.sampled_from(["/a", "/b", "/s", "/n", "/arr", "/a/b", "/arr[1]", "[/unit price]"]).map(
    lambda p: Field(parse_path(p))
)
literals = st.one_of(ints, floats, texts, st.none()).map(Literal)
patterns = st.sampled_from(["a", "^a", "b$", "(?i)A", "a|1", "[0-9]", "it's", "\\.", "(a)\\1", ""])
SIMPLE_FNS = ["UPPER", "LENGTH", "ABS", "COALESCE", "CONCAT", "SUBSTR", "IF", "TRUE_VALUE", "ROUND"]


def _call(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    def build(name: str) -> st.SearchStrategy[Node]:
        spec = FUNCTIONS[name]
        hi = spec.max_args if spec.max_args >= 0 else spec.min_args + 2
        return st.lists(children, min_size=spec.min_args, max_size=hi).map(
            lambda args: Call(name, tuple(args))
        )

    return st.sampled_from(SIMPLE_FNS).flatmap(build)


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    items = st.lists(children, min_size=1, max_size=3).map(tuple)
    ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        children.map(Neg),
        st.builds(Arith, st.sampled_from(["+", "-", "*", "/", "%"]), children, children),
        st.builds(Compare, ops, children, children),
        st.builds(Between, children, children, children, st.booleans()),
        st.builds(InList, children, items, st.booleans()),
        st.builds(Like, children, patterns, st.booleans(), st.booleans()),
        st.builds(BeginsWith, children, items, st.booleans()),
        st.builds(EndsWith, children, items, st.booleans()),
        st.builds(IsNull, children, st.booleans()),
        st.builds(IsNaN, children, st.booleans()),
        children.map(Not),
        st.builds(And, children, children),
        st.builds(Or, children, children),
        _call(children),
    )


nodes: st.SearchStrategy[Node] = st.recursive(st.one_of(literals, fields), _extend, max_leaves=8)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), ints, st.sampled_from([0.5, -2.5, 1e300]),
    st.sampled_from(["", "a", "b", "1", "2.5", "abc", "A", "é", "it's"]),
)  # fmt: skip
values = st.one_of(scalars, st.lists(scalars, max_size=3))


def documents() -> st.SearchStrategy[dict[str, Any]]:
    """Documents with the fields the node strategy reads (some missing)."""
    return st.fixed_dictionaries(
        {},
        optional={
            "a": st.one_of(values, st.fixed_dictionaries({"b": values})),
            "b": values,
            "s": values,
            "n": values,
            "arr": values,
            "unit price": values,
        },
    )
