"""Columns filled from coded columns (``jsonfields.top_codes_at`` through
``topic/fieldread.py``) against columns filled from the plain values: the same numbers,
codes and dictionary, whatever the values (numbers at the exact-integer edge, signed
zeros, numeric text, booleans, NULL, repeated and non-ASCII text) and whatever the
column held before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.codecs import json_fields
from sowlib.columns import CodedColumn
from sowlib.paths import parse_path
from tests.codecs.test_json_fields_at import needs_c, published

np = pytest.importorskip("numpy", reason="the column engine needs numpy")
from sowlib.columns.column import Column, entry_key  # noqa: E402  (needs numpy)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**53, 2**53 + 1, -(2**53), -(2**53) - 1, 10**17, -(10**17), 10**19]),
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 1e300, 5e-324, 1.0]),
    st.sampled_from(["", "1", "01", "2.5", "abc", "B", "EU", "\u00e9t\u00e9", "9007199254740993"]),
)


def filled(batches: list[list[Any]], coded: list[CodedColumn] | None) -> Column:
    """A column of every batch in turn, the last from ``coded`` when given."""
    column = Column(parse_path("/v"), sum(map(len, batches)))
    start = 0
    for i, batch in enumerate(batches):
        rows = np.arange(start, start + len(batch))
        column.rows = start + len(batch)
        last = coded is not None and i == len(batches) - 1
        column.set_many(rows, coded[0] if last and coded is not None else batch)
        start += len(batch)
    return column


def same_column(a: Column, b: Column) -> None:
    assert np.array_equal(a.code, b.code)
    numbers = a.code < 0
    assert np.array_equal(a.num[numbers], b.num[numbers])
    assert [entry_key(v) for v in a.values] == [entry_key(v) for v in b.values]
    for row in range(a.rows):
        assert entry_key(a.value(row)) == entry_key(b.value(row))


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.lists(scalars, max_size=4), st.lists(scalars, min_size=1, max_size=8))
def test_a_coded_batch_fills_a_column_as_its_values_do(before: list[Any], last: list[Any]) -> None:
    payloads = [json.dumps({"id": i, "v": v}).encode() for i, v in enumerate(last)]
    with published(payloads) as (log, offsets):
        from sowlib.topic.fieldread import mapped_columns

        coded = mapped_columns(log, offsets, ["v"])
    if coded is None:  # outside the C subset (a long integer or exponent): decoded instead
        assert json_fields.top_columns(payloads, ["v"]) is None
        return
    assert isinstance(coded[0], CodedColumn)
    assert [entry_key(v) for v in coded[0]] == [entry_key(v) for v in last]
    batches = [b for b in (before, last) if b]
    same_column(filled(batches, [coded[0]]), filled(batches, None))


def test_a_coded_column_reads_as_its_values() -> None:
    num = np.array([7.0, 0.0, 2.5, 0.0], dtype=np.float64).tobytes()
    code = np.array([-1, 0, -2, 1], dtype=np.int32).tobytes()
    column = CodedColumn(num, code, ["x", None])
    assert list(column) == [7, "x", 2.5, None]
    assert type(column[0]) is int
    assert type(column[2]) is float
    assert column[1:3] == ["x", 2.5]
    assert len(column) == 4
    with pytest.raises(ValueError):
        CodedColumn(num[:8], code, [])
