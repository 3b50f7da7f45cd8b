"""The compile-time fast paths agree with the general code they shortcut."""

from __future__ import annotations

import contextlib
import gc

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import FilterError
from sowlib.expr import clear_cache, compile_filter
from sowlib.expr.lexer import tokenize, tokenize_general
from sowlib.expr.nodes import (
    And,
    Compare,
    Field,
    Literal,
    Node,
    Or,
    new_and,
    new_compare,
    new_field,
    new_literal,
    new_or,
    walk,
)
from sowlib.expr.parser import _Parser
from sowlib.expr.to_python import compile_tree, is_boolean
from sowlib.expr.to_text import to_text
from sowlib.expr.tokens import Token
from tests.expr.strategies import nodes
from tests.expr.test_properties import GRAMMAR

# fragments that sit on the edges of the fast lexer's patterns (numbers followed by
# letters or dots, escapes, raw strings, '/' as division or path, non-ASCII)
FRAGMENTS = st.sampled_from(
    ["/a", "/@x", "/a.b-c:d[3]", "/", "/@", " ", "\t", "\n", "=", "==", "<>", "!", "!=", "<=",
     ">=", "<", ">", "+", "-", "*", "%", "AND", "or", "MOD", "r'", 'R"', "'", '"', "\\", "x",
     "r", "1", "1.", ".5", "1e", "1e5", "2.5e+3", "1e999", "99999999999999999999999", "0x",
     "é", "@", "_", "[/", "]", "[/x y]", "(", ")", ",", "'a b'", "'a\\'b'", "'é'", "\u00b2"]
)  # fmt: skip


def _lex(fn: object, text: str) -> list[Token] | tuple[str, int]:
    assert callable(fn)
    try:
        tokens: list[Token] = fn(text)
    except FilterError as exc:
        return type(exc).__name__, int(getattr(exc, "offset", -1))
    return tokens


@settings(max_examples=500)
@given(st.lists(FRAGMENTS, max_size=12).map("".join))
def test_fast_lexer_equals_the_general_one_on_fragment_soup(text: str) -> None:
    assert _lex(tokenize, text) == _lex(tokenize_general, text)


@settings(max_examples=300)
@given(st.text(max_size=30))
def test_fast_lexer_equals_the_general_one_on_any_text(text: str) -> None:
    assert _lex(tokenize, text) == _lex(tokenize_general, text)


class _GeneralParser(_Parser):
    """The parser without the lone-value shortcut of ``additive``."""

    def additive(self) -> Node:
        return self.arithmetic()


def _positions(node: Node) -> list[tuple[str, int, int]]:
    return [(type(n).__name__, n.start, n.end) for n in walk(node)]


def _parsed(parser: type[_Parser], text: str) -> object:
    try:
        node = parser(text).parse()
    except FilterError as exc:
        return type(exc).__name__, int(getattr(exc, "offset", -1))
    return node, _positions(node)


@settings(max_examples=300)
@given(nodes)
def test_fast_parser_equals_the_general_one_on_generated_filters(node: Node) -> None:
    text = to_text(node)
    assert _parsed(_Parser, text) == _parsed(_GeneralParser, text)


@settings(max_examples=500)
@given(st.lists(GRAMMAR, max_size=12).map(" ".join))
def test_fast_parser_equals_the_general_one_on_grammar_soup(text: str) -> None:
    assert _parsed(_Parser, text) == _parsed(_GeneralParser, text)


@settings(max_examples=200)
@given(nodes)
def test_compile_tree_finds_the_same_boolean_flag_as_is_boolean(node: Node) -> None:
    _, boolean = compile_tree(node)
    assert boolean is is_boolean(node)


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("text", ["/a = 1 AND /b LIKE 'x'", "/a = (1"])
def test_compile_leaves_the_cyclic_gc_as_it_found_it(enabled: bool, text: str) -> None:
    clear_cache()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with contextlib.suppress(FilterError):
            compile_filter(text)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _fields(node: Node) -> tuple[object, ...]:
    return (type(node), *attrs.astuple(node, recurse=False))


@given(nodes)
def test_node_builders_equal_the_attrs_constructors(node: Node) -> None:
    for n in walk(node):
        if isinstance(n, Literal):
            built: Node = new_literal(n.value, n.start, n.end)
            want: Node = Literal(n.value, start=n.start, end=n.end)
        elif isinstance(n, Field):
            built, want = new_field(n.path, n.start, n.end), Field(n.path, start=n.start, end=n.end)
        elif isinstance(n, Compare):
            built = new_compare(n.op, n.left, n.right)
            want = Compare(n.op, n.left, n.right, start=n.left.start, end=n.right.end)
        elif isinstance(n, And):
            built, want = (
                new_and(n.left, n.right),
                And(n.left, n.right, start=n.left.start, end=n.right.end),
            )
        elif isinstance(n, Or):
            built, want = (
                new_or(n.left, n.right),
                Or(n.left, n.right, start=n.left.start, end=n.right.end),
            )
        else:
            continue
        assert built == want
        assert hash(built) == hash(want)
        assert repr(built) == repr(want)
        assert _fields(built) == _fields(want)
