"""Lazy code generation and lazy LIKE compilation give the same answers as before."""

from __future__ import annotations

import pytest

from sowlib.errors import InvalidPatternError
from sowlib.expr import api, clear_cache, compile_filter, like
from sowlib.expr.nodes import And
from sowlib.expr.parser import parse
from sowlib.expr.to_python import boolean_nodes, is_boolean

DOCS = [{"a": 5, "b": "xy"}, {"a": 1, "b": "é"}, {"a": "7", "b": None}, {}, {"a": [1, 9]}]


def test_matches_switches_to_the_generated_function_with_the_same_answers() -> None:
    clear_cache()
    f = compile_filter("/a > 2 AND (/b LIKE '^x' OR /b IS NULL)")
    want = [f.matches(d) for d in DOCS]
    for i in range(api.WARM_AFTER + 1):
        assert f.matches(DOCS[i % len(DOCS)]) == want[i % len(DOCS)]
    assert f.matcher is f._state.match  # the generated function is now in use
    assert [f.matcher(d, None) for d in DOCS] == want == [True, False, True, False, True]


def test_matcher_generates_at_once_and_is_stable() -> None:
    clear_cache()
    f = compile_filter("/a = 1 OR /a = 5")
    m = f.matcher
    assert m is f.matcher
    assert (
        [m(d, None) for d in DOCS]
        == [f.matches(d) for d in DOCS]
        == [
            True,
            True,
            False,
            False,
            True,
        ]
    )


def test_non_boolean_filter_keeps_its_closure() -> None:
    f = compile_filter("/a + 1")
    assert f.matcher is f._state.match
    assert [f.matches(d) for d in DOCS] == [True, True, True, False, True]


def test_boolean_nodes_is_one_pass_and_agrees_with_is_boolean() -> None:
    node = parse(" AND ".join(f"/a{i} = {i}" for i in range(300)) + " AND /z + 1")
    flags = boolean_nodes(node)
    assert flags[id(node)] is False
    assert isinstance(node, And)
    assert is_boolean(node.left)
    assert not is_boolean(node.right)


def test_plain_pattern_is_checked_without_compiling_and_compiled_on_first_use() -> None:
    like.compile_pattern.cache_clear()
    like.check_pattern("^abc 12$", "x", 0)
    assert like.compile_pattern.cache_info().currsize == 0
    m = like.like_matcher("^abc", False)
    assert like.compile_pattern.cache_info().currsize == 0
    assert m("abcd")
    assert not m("xabc")
    assert like.compile_pattern.cache_info().currsize == 1


def test_bytes_form_only_for_non_ascii_values() -> None:
    like.compile_pattern.cache_clear()
    m = like.like_matcher("^.b", False)
    assert m("ab")
    compiled = like.compile_pattern("^.b")
    assert compiled._bytes_rx is like._UNSET
    assert not m("éb")  # one character, two bytes: '.' matches one byte (spec byte semantics)
    assert compiled._bytes_rx is not like._UNSET


def test_invalid_pattern_still_fails_at_parse_time() -> None:
    with pytest.raises(InvalidPatternError) as info:
        compile_filter("/a = 1 AND /b LIKE 'a(b'")
    assert info.value.offset == 19
