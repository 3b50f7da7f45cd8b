"""The public filter API: errors with carets, caching, Filter properties, docs table."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib.errors import FilterError, FilterSyntaxError, RegexTimeoutError
from sowlib.expr import (
    EvalContext,
    Filter,
    InvalidPatternError,
    compile_filter,
    like,
    markdown_table,
    parse_filter,
)
from sowlib.expr.like import translate
from sowlib.paths import parse_path

DOCS = Path(__file__).parents[2] / "docs" / "filters.md"


def test_syntax_error_renders_the_filter_with_a_caret() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter("/order/price >")
    lines = str(info.value).splitlines()
    assert lines[-2].strip() == "/order/price >"
    assert lines[-1].index("^") == lines[-2].index("/") + 14
    assert info.value.expression == "/order/price >"


def test_non_string_filter_is_a_filter_error() -> None:
    with pytest.raises(FilterError):
        compile_filter(42)  # type: ignore[arg-type]


def test_compile_filter_returns_a_filter_unchanged_and_caches() -> None:
    f = compile_filter("/a = 1")
    assert compile_filter(f) is f
    assert compile_filter("/a = 1") is f
    assert compile_filter("/a == 1").node == f.node


def test_filter_properties() -> None:
    f = compile_filter("/a > 1 AND SOW_KEY() = 'k' OR UNIX_TIMESTAMP() > 0 AND /b/c = 2")
    assert f.fields == frozenset({parse_path("/a"), parse_path("/b/c")})
    assert not f.deterministic
    assert f.uses_context
    g = compile_filter("/a + 1")
    assert g.deterministic
    assert not g.uses_context
    assert g.evaluate({"a": 2}) == 3
    assert g.evaluate({}) is None
    assert isinstance(g, Filter)


def test_context_is_passed_to_matches() -> None:
    f = compile_filter("TOPIC_NAME() = 'orders' AND /a = 1")
    assert f.matches({"a": 1}, EvalContext(topic="orders"))
    assert not f.matches({"a": 1})


def test_like_timeout_raises_regex_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(like, "REGEX_TIMEOUT", 0.05)
    f = compile_filter("/v LIKE '(a|aa)+b'")
    with pytest.raises(RegexTimeoutError):
        f.matches({"v": "a" * 60})


def test_invalid_pattern_is_a_syntax_error_subclass_with_offset() -> None:
    with pytest.raises(InvalidPatternError) as info:
        parse_filter("/a LIKE '(('")
    assert isinstance(info.value, FilterSyntaxError)
    assert info.value.offset == 8


@pytest.mark.parametrize(
    ("pcre", "translated"),
    [
        ("ab(?i)c|d", "ab(?i:c)|(?i:d)"),
        ("(?U)a+b*?", "a+?b*"),
        ("(?A)abc", "\\A(?:abc)"),
        ("\\Qa.b\\E", "a\\.b"),
        ("(?<n>x)\\k<n>", "(?P<n>x)(?P=n)"),
        ("a\\z", "a\\Z"),
        ("(?'n'x)", "(?P<n>x)"),
    ],
)
def test_pcre_translation(pcre: str, translated: str) -> None:
    assert translate(pcre) == translated


def test_docs_contain_the_generated_function_table() -> None:
    assert markdown_table() in DOCS.read_text(encoding="utf-8")
