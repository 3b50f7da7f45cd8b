"""The matcher and lazy LIKE compilation give the same answers as the closures."""

from __future__ import annotations

import pytest

from sowlib.errors import InvalidPatternError
from sowlib.expr import clear_cache, compile_filter, like
from sowlib.expr.nodes import And
from sowlib.expr.parser import parse
from sowlib.expr.to_python import boolean_nodes, is_boolean

DOCS = [{"a": 5, "b": "xy"}, {"a": 1, "b": "é"}, {"a": "7", "b": None}, {}, {"a": [1, 9]}]


def test_matcher_is_stable_and_agrees_with_matches() -> None:
    clear_cache()
    f = compile_filter("/a > 2 AND (/b LIKE '^x' OR /b IS NULL)")
    m = f.matcher
    assert m is f.matcher
    assert [m(d, None) for d in DOCS] == [f.matches(d) for d in DOCS]
    assert [m(d) for d in DOCS] == [True, False, True, False, True]


def test_non_boolean_filter_matcher_applies_the_truth_rule() -> None:
    f = compile_filter("/a + 1")
    assert [f.matcher(d) for d in DOCS] == [f.matches(d) for d in DOCS]
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
    assert not compiled.has_bytes_form
    assert not m("éb")  # one character, two bytes: '.' matches one byte (spec byte semantics)
    assert compiled.has_bytes_form


def test_invalid_pattern_still_fails_at_parse_time() -> None:
    with pytest.raises(InvalidPatternError) as info:
        compile_filter("/a = 1 AND /b LIKE 'a(b'")
    assert info.value.offset == 19
