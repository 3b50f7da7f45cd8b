"""Every compliance case through the Python back-end (``Filter.matches`` and the closures)
and through the column evaluator (``sowlib.columns``: the vector program over columns
built from the messages)."""

from __future__ import annotations

from typing import Any

import pytest

from sowlib.columns import select_docs
from sowlib.errors import FilterArityError, FilterSyntaxError, UnknownFunctionError
from sowlib.expr import EvalContext, InvalidPatternError, compile_filter, parse_filter
from sowlib.expr.interp import evaluate
from sowlib.expr.runtime import truthy
from sowlib.expr.to_python import compile_node
from tests.compliance.loader import iter_cases, params

ERRORS: dict[str, type[Exception]] = {
    "syntax": FilterSyntaxError,
    "unknown_function": UnknownFunctionError,
    "arity": FilterArityError,
    "regex": InvalidPatternError,
}


@pytest.mark.parametrize("backend", ["closures", "columns"])
@pytest.mark.parametrize(("file", "comment", "messages", "case", "contexts"), params())
def test_case(
    file: str,
    comment: str,
    messages: list[Any],
    case: dict[str, Any],
    contexts: list[dict[str, Any]] | None,
    backend: str,
) -> None:
    text = case["filter"]
    if backend == "columns":
        if "error" in case:
            pytest.skip("a bad filter fails in the parser, before any back-end")
        got = select_docs(compile_filter(text).node, messages)
        if got is None:
            pytest.skip(
                "no vector program: a context function, two fields in one clause, or no numpy"
            )
        assert got == case["matches"]
        return
    if "error" in case:
        kind, offset = case["error"]["kind"], case["error"]["offset"]
        with pytest.raises(ERRORS[kind]) as info:
            compile_filter(text)
        if kind == "syntax":
            assert not isinstance(info.value, InvalidPatternError)
        assert info.value.offset == offset  # type: ignore[attr-defined]
        return
    f = compile_filter(text)
    closures = compile_node(f.node)
    ctxs = [EvalContext(**c) for c in contexts] if contexts else [None] * len(messages)
    got = [i for i, m in enumerate(messages) if f.matches(m, ctxs[i])]
    assert got == case["matches"]
    # the closures and the reference interpreter agree with the matcher
    assert [i for i, m in enumerate(messages) if truthy(closures(m, ctxs[i]))] == got
    assert [i for i, m in enumerate(messages) if truthy(evaluate(f.node, m, ctxs[i]))] == got
    assert parse_filter(f.to_text()) == f.node


def test_there_are_at_least_400_cases() -> None:
    assert sum(1 for _ in iter_cases()) >= 400


def test_every_error_kind_is_covered() -> None:
    kinds = {c["error"]["kind"] for _, _, _, c, _ in iter_cases() if "error" in c}
    assert kinds == set(ERRORS)
