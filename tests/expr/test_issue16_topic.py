"""Issue 16 through a topic: one stored value never breaks later queries or publishes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import RegexBudgetError, RegexTimeoutError
from sowlib.expr import clear_cache, compile_filter, like

VALUES = ["9" * 309, "9" * 5000, "9" * 20_000 + "x", "1e999", "-" + "9" * 400]


def _publish_all(store: SowStore) -> None:
    topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/a"]], indexes="/a")
    for i, v in enumerate(VALUES):
        topic.publish(json.dumps({"id": v if i == 0 else str(i), "a": v}).encode())
    topic.publish(json.dumps({"id": "n", "a": 5}).encode())


QUERIES = ["/a > 1", "/a = 5", "/a < 10", "/a BETWEEN 1 AND 10", "/a IN (5, 'x')", "/id > 1",
           "/a LIKE '^9'", "/a = '1e999'"]  # fmt: skip


@pytest.mark.parametrize("reopen", [False, True])
def test_issue16_huge_numeric_strings_never_break_queries(tmp_path: Path, reopen: bool) -> None:
    store = SowStore(tmp_path / "s")
    _publish_all(store)
    if reopen:
        store.close()
        store = SowStore(tmp_path / "s")
    topic = store.topic("t")
    for q in QUERIES:
        start = time.perf_counter()
        got = {r.sow_key for r in topic.sow(q)}
        scan = {r.sow_key for r in topic.sow(q) if compile_filter(q).matches(r.doc)}
        assert got == scan, q
        assert time.perf_counter() - start < 2.0, q
    assert len(topic.sow("/a = 5")) == 1
    assert len(topic.sow("/a > 1")) == len(VALUES) + 1  # huge numbers and strings are > 1
    store.close()


def _scan(matches: Callable[[Any], bool], docs: list[dict[str, str]]) -> None:
    """A query's scan: each value alone stops at REGEX_TIMEOUT; the budget is shared."""
    for d in docs:
        try:
            matches(d)
        except RegexBudgetError:
            raise
        except RegexTimeoutError:
            continue


def test_issue16_regex_budget_stops_a_query_of_slow_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(like, "REGEX_TIMEOUT", 0.05)
    clear_cache()
    f = compile_filter("/s LIKE '^(a|aa)+$'")
    docs = [{"s": "a" * 60 + "b"}] * 50
    with pytest.raises(RegexTimeoutError):
        f.matches(docs[0])  # one value: the per-match limit
    start = time.perf_counter()
    with pytest.raises(RegexBudgetError), like.regex_budget(0.2):
        _scan(f.matches, docs)
    assert time.perf_counter() - start < 1.0  # not 50 x 0.05 s
    clear_cache()


def test_issue16_regex_budget_counts_only_regex_time() -> None:
    f = compile_filter("/s LIKE 'b+c'")
    with like.regex_budget(0.5):
        for _ in range(2000):
            assert f.matches({"s": "abbc"})
    assert not like.budget_active()


def test_issue16_regexp_replace_with_a_document_pattern_is_bounded() -> None:
    value = "9" * 5000  # once ran for a minute inside the engine, past its timeout
    f = compile_filter("REGEXP_REPLACE(/a, /a, 'x') IS NULL")
    start = time.perf_counter()
    assert f.matches({"a": value})  # a pattern over the length limit: NULL
    assert compile_filter("REGEXP_REPLACE(/a, /p, 'x') = 'x'").matches(
        {"a": "9" * 500, "p": "9" * 500}
    )
    assert time.perf_counter() - start < 2.0


def test_issue16_long_like_pattern_is_rejected_at_parse() -> None:
    from sowlib.errors import InvalidPatternError

    with pytest.raises(InvalidPatternError) as info:
        compile_filter("/a LIKE '" + "9" * (like.MAX_PATTERN_LENGTH + 1) + "'")
    assert info.value.offset == 8
    assert compile_filter("/a LIKE '" + "9" * like.MAX_PATTERN_LENGTH + "'").matches(
        {"a": "9" * 600}
    )
