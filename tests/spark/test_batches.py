"""The ``sow`` source's Arrow reads: record batches hold exactly the rows tuples would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

T = pytest.importorskip("pyspark.sql.types")

from sowlib import SowStore  # noqa: E402  (after the skip)
from sowlib.spark.batches import (  # noqa: E402
    batch_readable,
    convert_value,
    record_batches,
)
from sowlib.spark.datasource import Pushed, convert_row  # noqa: E402

pytestmark = pytest.mark.spark

FLAT = T.StructType(
    [
        T.StructField("s", T.StringType()),
        T.StructField("b", T.BooleanType()),
        T.StructField("l", T.LongType()),
        T.StructField("i", T.IntegerType()),
        T.StructField("t", T.ByteType()),
        T.StructField("d", T.DoubleType()),
        T.StructField("f", T.FloatType()),
        T.StructField("_sow_key", T.StringType()),
        T.StructField("_seq", T.LongType()),
    ]
)

# JSON values of every kind, often the column's own (so whole columns are native too)
json_values = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.integers(-200, 200),
    st.floats(allow_nan=False),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from("xy"), st.integers(0, 3), max_size=2),
)
column_values = st.sampled_from(
    [
        json_values,
        st.text(max_size=3),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-128, 127),
        st.floats(allow_nan=False),
    ]
)


@st.composite
def documents(draw: Any) -> list[dict[str, Any]]:
    """Documents whose fields each draw from one kind of value (or any), some missing."""
    rows = draw(st.integers(0, 12))
    docs: list[dict[str, Any]] = [{"k": n} for n in range(rows)]
    for name in "sblitdf":
        values = draw(column_values)
        for doc in docs:
            if draw(st.booleans()):
                doc[name] = draw(values)
    return docs


def _rows_as_tuples(records: list[Any], pushed: list[Pushed]) -> list[tuple[Any, ...]]:
    rows = [convert_row(r, FLAT) for r in records]
    return [row for row in rows if all(p.check(row) for p in pushed)]


def _rows_as_batches(records: list[Any], pushed: list[Pushed], size: int) -> list[tuple[Any, ...]]:
    keep = [(p.index, p.check_value) for p in pushed]
    batches = list(record_batches(records, FLAT, keep, rows=size))
    assert all(b.num_rows for b in batches)
    return [tuple(row.values()) for b in batches for row in b.to_pylist()]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        with np.errstate(over="ignore"):  # a float column rounds to 32 bits (or to inf)
            return a == b or bool(np.float32(a) == np.float32(b))
    return bool(a == b) and type(a) is type(b)


@settings(max_examples=200, deadline=None)
@given(docs=documents(), size=st.integers(1, 5), floor=st.integers(-5, 5))
def test_record_batches_hold_the_rows_convert_row_makes(
    docs: list[dict[str, Any]], size: int, floor: int
) -> None:
    with SowStore() as store:
        topic = store.create_topic("t", keys=["/k"])
        if docs:
            topic.publish_many(docs)
        records = list(topic.sow())
    pushed = [Pushed("", 2, ">", (floor,)), Pushed("", 1, "notnull", ())]
    for checks in ([], pushed):
        expected = _rows_as_tuples(records, checks)
        got = _rows_as_batches(records, checks, size)
        assert len(got) == len(expected)
        for row, want in zip(got, expected, strict=True):
            assert all(_same(x, y) for x, y in zip(row, want, strict=True)), (row, want)


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        ("x", T.StringType(), "x"),
        (True, T.StringType(), "true"),
        (12, T.StringType(), "12"),
        ({"a": [1]}, T.StringType(), '{"a": [1]}'),
        (True, T.BooleanType(), True),
        (1, T.BooleanType(), None),
        (3, T.DoubleType(), 3.0),
        (True, T.DoubleType(), None),  # a JSON boolean is not a number
        ("3", T.DoubleType(), None),
        (2**63, T.LongType(), None),  # outside the column's range
        (-(2**63), T.LongType(), -(2**63)),
        (128, T.ByteType(), None),
        (-128, T.ByteType(), -128),
        (1.0, T.LongType(), None),
        (False, T.IntegerType(), None),
        (None, T.LongType(), None),
    ],
)
def test_convert_value(value: Any, kind: Any, expected: Any) -> None:
    got = convert_value(value, kind)
    assert got == expected
    assert type(got) is type(expected)


def test_only_flat_schemas_of_plain_types_are_read_as_batches() -> None:
    assert batch_readable(FLAT)
    for other in (T.TimestampType(), T.ArrayType(T.LongType()), T.DecimalType(5, 2)):
        assert not batch_readable(T.StructType([T.StructField("x", other)]))


def test_a_read_through_spark_converts_each_value_as_documented(spark: Any, tmp_path: Path) -> None:
    from sowlib.spark.datasource import register

    register(spark)
    docs: list[dict[str, Any]] = [
        {"id": 1, "px": 10.5, "q": 2**70, "name": {"a": 1}, "ok": True},
        {"id": 2, "px": "high", "q": 5, "name": "b", "ok": 1},
        {"id": 3, "px": 7, "q": True, "ok": None},
    ]
    with SowStore(tmp_path) as store:
        store.create_topic("t", keys=["/id"]).publish_many(docs)
    df = (
        spark.read.format("sow")
        .option("path", str(tmp_path))
        .option("topic", "t")
        .schema("id long, px double, q long, name string, ok boolean, _seq long")
        .load()
    )
    rows = sorted(tuple(r) for r in df.collect())
    assert rows == [
        (1, 10.5, None, '{"a": 1}', True, 1),
        (2, None, 5, "b", None, 2),
        (3, 7.0, None, None, None, 3),
    ]
    assert [r.id for r in df.where("px > 8").collect()] == [1]  # pushed, then checked
