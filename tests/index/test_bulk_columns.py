"""The bulk paths of index upkeep agree with their references.

``IndexSet.columns`` (C-level reads of top-level fields) against each path's getter;
``MemoIndex.add_many`` (numbers grouped without a type check per value) against
``update`` one key at a time.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from sowlib.index import IndexSet
from sowlib.index.memo import MemoIndex
from sowlib.paths import parse_path

_DOCS: list[list[Any]] = [
    [{"id": i, "sym": f"S{i % 3}", "px": i / 4, "a": {"b": i}} for i in range(50)],
    [{"id": 1, "sym": "A", "px": 1.0, "a": {"b": 1}}, {"id": 2, "px": 2}],  # a field missing
    [{"id": 1, "sym": [1, 2], "px": None, "a": 5}, "text", 7, None],  # not every doc a dict
    [{"id": 2**70, "sym": True, "px": math.nan, "a": {}}, {"id": -3, "sym": "", "px": 2**80}],
    [],
]


@pytest.mark.parametrize("docs", _DOCS)
def test_columns_equal_the_getters(docs: list[Any]) -> None:
    ix = IndexSet(["/id"], [["/sym"]], ["/px", "/a/b"])
    columns = ix.columns(docs)
    expected = [[path.getter(doc) for doc in docs] for path in ix.paths]
    assert len(columns) == len(expected) == 4
    for got, want in zip(columns, expected, strict=True):
        assert [(type(v), repr(v)) for v in got] == [(type(v), repr(v)) for v in want]


@pytest.mark.parametrize("docs", _DOCS)
def test_bulk_inserts_equal_one_by_one(docs: list[Any]) -> None:
    keys = list(range(len(docs)))
    bulk = IndexSet(["/id"], [["/sym"]], ["/px", "/a/b"])
    bulk.on_insert_many(keys, docs)
    single = IndexSet(["/id"], [["/sym"]], ["/px", "/a/b"])
    for key, doc in zip(keys, docs, strict=True):
        single.on_put(key, None, doc)
    assert bulk.irregular == single.irregular
    assert bulk.live == single.live
    for path in ("/px", "/a/b"):
        a, b = bulk.memo(parse_path(path)), single.memo(parse_path(path))
        assert a is not None
        assert b is not None
        assert a.export() == b.export()
    assert bulk.hashes[0].export() == single.hashes[0].export()


@pytest.mark.parametrize(
    "values",
    [
        [1, 2, 2, 3.5, 3.5, -1],
        [1, math.nan, 2],
        [1, True, "x", None, [1], 2**2000],
        [2**2000, 5],
    ],
)
def test_memo_add_many_equals_update(values: list[Any]) -> None:
    keys = list(range(len(values)))
    bulk, single = MemoIndex(parse_path("/v")), MemoIndex(parse_path("/v"))
    bulk.add_many(keys, values)
    for key, value in zip(keys, values, strict=True):
        single.update(key, value, True)
    assert bulk.export() == single.export()
