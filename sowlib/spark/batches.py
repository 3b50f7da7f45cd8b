"""Records as Arrow record batches: the ``sow`` data source's batch reads of flat schemas.

A Python data source may yield ``pyarrow.RecordBatch`` objects instead of tuples;
Spark then takes them as they are, where tuples cost a converter call per value in
the worker. The values are what :func:`convert_value` makes of each field (a value of
another kind is NULL), gathered a column at a time: a column whose values already have
the column's kind goes to Arrow in one call. Only flat schemas of strings, booleans,
integers and floating point numbers are read this way (:func:`batch_readable`).
Imports pyarrow, pyspark's types and ``sowlib.query``; nothing of ``datasource``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from sowlib.query import Record

__all__ = ["BATCH_ROWS", "batch_readable", "convert_column", "convert_value", "record_batches"]

#: Rows per record batch (Spark's default ``spark.sql.execution.arrow.maxRecordsPerBatch``).
BATCH_ROWS = 10_000
#: The range of each integer type.
_RANGES: dict[type[T.DataType], tuple[int, int]] = {
    T.ByteType: (-(2**7), 2**7 - 1),
    T.ShortType: (-(2**15), 2**15 - 1),
    T.IntegerType: (-(2**31), 2**31 - 1),
    T.LongType: (-(2**63), 2**63 - 1),
}
#: The Python type a column's values have when they need no conversion.
_NATIVE: dict[type[T.DataType], type] = {
    T.StringType: str,
    T.BooleanType: bool,
    T.DoubleType: float,
    T.FloatType: float,
    **dict.fromkeys(_RANGES, int),
}
_DOC = attrgetter("doc")
_KEY = attrgetter("sow_key")
_SEQ = attrgetter("seq")


def convert_value(value: Any, kind: T.DataType) -> Any:
    """``value`` (a decoded JSON value) as a ``kind`` column holds it; None when it cannot.

    Text columns take text, and numbers, booleans, objects and arrays as their JSON
    text; numeric columns take numbers, not booleans (an integer column only integers
    in its range); boolean columns only booleans.
    """
    if value is None:
        return None
    if isinstance(kind, T.StringType):
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        return json.dumps(value) if isinstance(value, dict | list) else str(value)
    if isinstance(kind, T.BooleanType):
        return value if isinstance(value, bool) else None
    if isinstance(kind, T.FloatType | T.DoubleType):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if number else None
    bounds = _RANGES.get(type(kind))
    if bounds is not None:
        if isinstance(value, int) and not isinstance(value, bool):
            return value if bounds[0] <= value <= bounds[1] else None
        return None
    return value


def batch_readable(schema: T.StructType) -> bool:
    """Whether :func:`record_batches` reads rows of ``schema`` (flat, plain types)."""
    return all(type(f.dataType) in _NATIVE for f in schema.fields)


def record_batches(
    records: Iterable[Record],
    schema: T.StructType,
    keep: Sequence[tuple[int, Callable[[Any], bool]]] = (),
    rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """``records`` as record batches of ``schema`` (fields, then ``_sow_key``/``_seq``/``_change``).

    ``keep`` holds ``(column index, check)`` pairs: a row stays only when every check
    is true of its converted value in that column. Batches hold at most ``rows``
    records before the checks; empty ones are not yielded.
    """
    arrow = to_arrow_schema(schema, timezone="UTC")
    fields = schema.fields
    it = iter(records)
    while chunk := list(islice(it, rows)):
        docs = [d if type(d) is dict else _mapping(d) for d in map(_DOC, chunk)]
        columns: list[list[Any]] = []
        for field in fields:
            name = field.name
            if name == "_sow_key":
                columns.append(list(map(_KEY, chunk)))
            elif name == "_seq":
                columns.append(list(map(_SEQ, chunk)))
            elif name == "_change":
                columns.append(["publish"] * len(chunk))
            else:
                columns.append(convert_column([d.get(name) for d in docs], field.dataType))
        arrays = [pa.array(c, f.type) for c, f in zip(columns, arrow, strict=True)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=arrow)
        if keep:
            checked = [map(check, columns[i]) for i, check in keep]
            mask = [all(t) for t in zip(*checked, strict=True)]
            batch = batch.filter(pa.array(mask, pa.bool_()))
        if batch.num_rows:
            yield batch


def _mapping(doc: Any) -> Mapping[str, Any]:
    return doc if isinstance(doc, Mapping) else {}


def convert_column(values: list[Any], kind: T.DataType) -> list[Any]:
    """:func:`convert_value` of each of ``values`` for a ``kind`` column; the list itself
    when ``kind`` is a plain type and every value already has it."""
    native = _NATIVE.get(type(kind))
    if native is None:
        return [convert_value(v, kind) for v in values]
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds or (kinds == {native} and native is not int):
        return values
    if kinds == {int} and native is int:
        low, high = _RANGES[type(kind)]
        present = [v for v in values if v is not None]
        if low <= min(present) and max(present) <= high:
            return values
    return [convert_value(v, kind) for v in values]
