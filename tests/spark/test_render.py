"""The sink's driver-side JSON rendering of flat Arrow batches: the values of each row."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
T = pytest.importorskip("pyspark.sql.types")

from sowlib.spark.render import json_rows, renders  # noqa: E402  (after the skips)

pytestmark = pytest.mark.spark

_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
_SPECIAL_DOUBLES = [0.0, -0.0, 1.0, 1e7, 1e21, 1e-7, 5e-324, 2.5, math.nan, math.inf, -math.inf]


def _expected(value: Any) -> Any:
    """A value as Spark's to_json writes it, read back (non-finite doubles are text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


_ARROW = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "bool": pa.bool_(),
    "double": pa.float64(),
    **{kind: getattr(pa, kind)() for kind in _INTS},
}


def _values(kind: str) -> Any:
    if kind in ("string", "large_string"):
        return st.text(max_size=6)  # quotes, backslashes and control characters included
    if kind == "bool":
        return st.booleans()
    if kind == "double":
        return st.floats() | st.sampled_from(_SPECIAL_DOUBLES)
    bits = _INTS[kind]
    return st.integers(-(2**bits), 2**bits - 1)


@st.composite
def batches(draw: Any) -> tuple[Any, list[str]]:
    """A record batch of up to 6 plain columns with NULLs anywhere, and JSON field names."""
    rows = draw(st.integers(0, 8))
    kinds = draw(st.lists(st.sampled_from(sorted(_ARROW)), max_size=6))
    arrays = [
        pa.array(draw(st.lists(_values(k) | st.none(), min_size=rows, max_size=rows)), _ARROW[k])
        for k in kinds
    ]
    names = draw(st.lists(st.text(max_size=4), min_size=len(kinds), max_size=len(kinds)))
    fields = [pa.field(f"c{i}", a.type) for i, a in enumerate(arrays)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)), names


@settings(max_examples=300, deadline=None)
@given(data=batches(), offset=st.integers(0, 3))
def test_each_row_reads_back_as_its_non_null_fields_in_order(
    data: tuple[Any, list[str]], offset: int
) -> None:
    batch, names = data
    batch = batch.slice(min(offset, batch.num_rows))  # Arrow slices share their buffers
    rendered = json_rows(batch, names, list(range(batch.num_columns)))
    assert len(rendered) == batch.num_rows
    for row, text in enumerate(rendered):
        assert isinstance(text, bytes)
        pairs = json.loads(text, object_pairs_hook=list)
        expected = [
            (name, _expected(column[row].as_py()))
            for name, column in zip(names, batch.columns, strict=True)
            if column[row].is_valid
        ]
        assert pairs == expected
        for (_, got), (_, want) in zip(pairs, expected, strict=True):
            assert type(got) is type(want)  # doubles stay doubles: 1.0, not 1
            if isinstance(want, float):
                assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_only_the_chosen_columns_are_rendered_under_the_given_names() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"a": pa.array([1, None]), "gone": pa.array([True, False]), "s": pa.array(["x", "y"])}
    )
    assert json_rows(batch, ["A", 'q"'], [0, 2]) == [b'{"A":1,"q\\"":"x"}', b'{"q\\"":"y"}']
    assert json_rows(batch, [], []) == [b"{}", b"{}"]


def test_numbers_are_spelled_as_json_numbers_that_read_back_as_doubles() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"d": pa.array([1.0, 1e7, 1e21, -0.0, 0.1, math.nan, -math.inf])}
    )
    assert json_rows(batch, ["d"], [0]) == [
        b'{"d":1.0}',
        b'{"d":10000000.0}',
        b'{"d":1e+21}',
        b'{"d":-0.0}',
        b'{"d":0.1}',
        b'{"d":"NaN"}',
        b'{"d":"-Infinity"}',
    ]


def test_which_spark_types_are_rendered() -> None:
    plain = [
        T.StringType(),
        T.BooleanType(),
        T.ByteType(),
        T.ShortType(),
        T.IntegerType(),
        T.LongType(),
        T.DoubleType(),
    ]
    others = [
        T.FloatType(),  # Spark spells a float's digits its own way
        T.DecimalType(10, 2),
        T.DateType(),
        T.TimestampType(),
        T.BinaryType(),
        T.NullType(),
        T.ArrayType(T.IntegerType()),
        T.StructType([T.StructField("x", T.IntegerType())]),
        T.MapType(T.StringType(), T.IntegerType()),
    ]
    assert renders([T.StructField(f"c{i}", t) for i, t in enumerate(plain)])
    assert renders([])
    for other in others:
        assert not renders([T.StructField("a", T.LongType()), T.StructField("b", other)])


@pytest.mark.parametrize("large_input", [False, True])
def test_rows_that_could_outgrow_32_bit_offsets_are_joined_as_large_text(
    monkeypatch: pytest.MonkeyPatch, large_input: bool
) -> None:
    from sowlib.spark import render

    text = pa.large_string() if large_input else pa.string()
    batch = pa.RecordBatch.from_pydict(
        {
            "n": pa.array([None, 2, 3]),
            "s": pa.array(['a"', None, "c"], text),
            "t": pa.array(["x", "y", None], text),
            "b": pa.array([True, None, False]),
            "d": pa.array([1.0, None, float("nan")]),
        }
    )
    small = json_rows(batch, batch.schema.names, range(5))
    monkeypatch.setattr(render, "_LARGE_AT", 0)
    assert json_rows(batch, batch.schema.names, range(5)) == small
    assert small == [
        b'{"s":"a\\"","t":"x","b":true,"d":1.0}',
        b'{"n":2,"t":"y"}',
        b'{"n":3,"s":"c","b":false,"d":"NaN"}',
    ]


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    # a Spark string can hold them (CAST(binary AS STRING)); to_json writes U+FFFD
    raw = pa.array([b"A\xffB", b'\xff"q', None, b"ok"], pa.binary())
    batch = pa.RecordBatch.from_arrays([raw.view(pa.string())], names=["s"])
    assert json_rows(batch, ["s"], [0]) == [
        '{"s":"A\ufffdB"}'.encode(),
        '{"s":"\ufffd\\"q"}'.encode(),
        b"{}",
        b'{"s":"ok"}',
    ]


def test_without_orjson_the_same_rows_are_written(monkeypatch: pytest.MonkeyPatch) -> None:
    from sowlib.spark import render

    texts = pa.array(['q"', "\\", "é\n\x01", None])
    batch = pa.RecordBatch.from_pydict({"s": texts, "n": [1, 2, 3, 4]})
    with_orjson = json_rows(batch, ['na"me', "n"], [0, 1])
    monkeypatch.setattr(render, "orjson", None)
    assert json_rows(batch, ['na"me', "n"], [0, 1]) == with_orjson
