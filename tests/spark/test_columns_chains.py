"""Issue 16: long AND/OR/arithmetic chains through to_column.

A chain once compiled by recursing once per clause (RecursionError at a few thousand
clauses) into SQL text that copied its left side at every clause (twice the size per
clause: 16 clauses made 45 MB). Now the text grows linearly, and a filter past what
Spark's parser takes is an ``UnsupportedFilterError``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sowlib.errors import UnsupportedFilterError
from sowlib.expr import compile_filter

pytestmark = pytest.mark.spark

DOCS: list[dict[str, Any]] = [
    *({"a": i, "b": i % 3} for i in range(-2, 70, 3)),
    {"a": "5"},
    {"a": "x"},
    {"a": None},
    {"b": 1},
    {},
]


def _arith(terms: int) -> str:
    return " - ".join("/b * 2" if i % 4 == 0 else str(i % 7) for i in range(terms))


# Long enough to go through the chain loops, short enough for a 1 GB test driver to
# parse the SQL text (each arithmetic term adds thousands of characters).
CLAUSES, TERMS = 6, 3

# a document the arithmetic chain matches
DOCS.append({"a": compile_filter(_arith(TERMS)).evaluate({"b": 1}), "b": 1})


def _chains(n: int, terms: int) -> list[str]:
    return [
        " AND ".join(f"/a != {i}" for i in range(n)),
        " OR ".join(f"/a = {i}" for i in range(n)),
        f"/a = {_arith(terms)}",
        "(/a > 3 OR /b = 1) AND " + " AND ".join(f"(/a != {i} OR /b = {i % 3})" for i in range(n)),
    ]


def test_issue16_long_chains_agree_with_python(spark: Any) -> None:
    from sowlib.spark import to_column

    df = spark.createDataFrame(
        [(i, json.dumps(d)) for i, d in enumerate(DOCS)], "id long, j string"
    )
    for text in _chains(CLAUSES, TERMS):
        rows = df.where(to_column(text, json_column="j")).select("id").collect()
        flt = compile_filter(text)
        want = [i for i, d in enumerate(DOCS) if flt.matches(d)]
        assert sorted(r["id"] for r in rows) == want, text[:60]
        # not vacuous: every chain matches some documents and rejects others
        assert 0 < len(want) < len(DOCS), text[:60]


@pytest.mark.parametrize("n", [5_000])
def test_issue16_chain_past_the_parser_limit_is_unsupported(n: int) -> None:
    from sowlib.spark import to_column
    from sowlib.spark.columns import MAX_EXPRESSION_CHARS

    for text in _chains(n, n):
        with pytest.raises(UnsupportedFilterError) as info:
            to_column(text, json_column="j")
        assert (info.value.construct, info.value.backend) == ("filter size", "spark")
        assert f"{MAX_EXPRESSION_CHARS:,}" in str(info.value)


def test_issue16_chain_text_grows_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    from sowlib.spark import columns, sqltext, to_column

    monkeypatch.setattr(sqltext, "to_spark", lambda expr: len(expr.sql))
    monkeypatch.setattr(columns, "MAX_EXPRESSION_CHARS", 10**9)
    for text_of in (
        lambda n: " AND ".join(f"/a != {i}" for i in range(n)),
        lambda n: " OR ".join(f"/a = {i}" for i in range(n)),
        lambda n: "/a = " + " + ".join("/b" for _ in range(n)),
    ):
        small, large = (to_column(text_of(n), json_column="j") for n in (20, 40))
        assert isinstance(small, int)
        assert isinstance(large, int)
        assert large < 2.5 * small
