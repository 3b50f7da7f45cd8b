"""Properties: text round-trips, fuzzed text only raises FilterError, compiled == reference."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import FilterError, RegexTimeoutError
from sowlib.expr import Filter, compile_filter, parse_filter, to_text
from sowlib.expr.interp import evaluate
from sowlib.expr.nodes import Node
from sowlib.expr.runtime import normalize, truthy
from sowlib.expr.to_python import compile_node
from tests.expr.strategies import documents, nodes


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _offset_of(text: str) -> int:
    """Compile ``text``; the error offset (0 when it compiles). Any other exception fails."""
    try:
        compile_filter(text)
    except FilterError as exc:
        return int(getattr(exc, "offset", 0))
    return 0


@given(nodes)
def test_generated_asts_round_trip_through_text(node: Node) -> None:
    assert parse_filter(to_text(node)) == node


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_arbitrary_text_only_raises_filter_error_with_offset_in_range(text: str) -> None:
    assert 0 <= _offset_of(text) <= len(text)


GRAMMAR = st.sampled_from(
    ["/a", " ", "=", "AND", "OR", "NOT", "(", ")", "'x'", "1", "-", "/", "IN", "LIKE", ",", "IS",
     "NULL", "BETWEEN", "UPPER(", "[/", "]", "\\", '"', "r'", "2.5e", "MOD", "BEGINS WITH"]
)  # fmt: skip


@settings(max_examples=300)
@given(st.lists(GRAMMAR, max_size=12).map(" ".join))
def test_grammar_soup_only_raises_filter_error(text: str) -> None:
    assert 0 <= _offset_of(text) <= len(text)


@settings(max_examples=200)
@given(nodes, st.lists(documents(), min_size=1, max_size=4))
def test_compiled_agrees_with_reference(node: Node, docs: list[dict[str, Any]]) -> None:
    fn = compile_node(node)
    matcher = Filter.from_node(node).matcher
    for doc in docs:
        try:
            want = evaluate(node, doc)
        except (RegexTimeoutError, RecursionError):
            return
        got = fn(doc, None)
        assert _same(normalize(got), normalize(want)), (to_text(node), doc)
        assert matcher(doc) == truthy(want), (to_text(node), doc)
