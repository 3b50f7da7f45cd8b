"""Rows of flat Arrow record batches as JSON objects, rendered a column at a time.

:class:`~sowlib.spark.sink.SowSink`'s fast path: instead of Spark's ``to_json`` in the
JVM, the driver receives the plain columns and joins their text with Arrow compute
kernels, so the per-row cost is a few C-level string copies. Only flat rows of
strings, booleans, integers and doubles take it (:func:`renders`); every other
schema keeps Spark's rendering. The result is the JSON ``to_json`` writes, NULL
fields left out, with one difference of spelling and none of value: a double is
written in its shortest round-trip form (``10000000.0`` where Spark writes
``1.0E7``). Non-finite doubles are the strings Spark writes (``"NaN"``,
``"Infinity"``, ``"-Infinity"``). Imports pyarrow, pyspark's types and orjson; nothing
from sowlib.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

__all__ = ["json_rows", "renders"]

#: Spark column types this module renders exactly like ``to_json``.
_PLAIN = (
    T.StringType,
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.DoubleType,
)
#: Bytes a JSON string cannot hold as they are (a column holding one is escaped by orjson).
_NEEDS_ESCAPE = re.compile(rb'["\\\x00-\x1f]')
#: The text type every piece is joined as.
_TEXT = pa.large_string()
_EMPTY = pa.scalar("", _TEXT)


def renders(fields: Sequence[T.StructField]) -> bool:
    """Whether :func:`json_rows` renders rows of these columns (flat and simple types)."""
    return all(isinstance(f.dataType, _PLAIN) for f in fields)


def json_rows(batch: pa.RecordBatch, names: Sequence[str], columns: Sequence[int]) -> list[bytes]:
    """Each row of ``batch`` as a JSON object of ``columns`` (indexes), named ``names``.

    NULL values leave their field out; ``columns`` must pass :func:`renders`. O(bytes)
    in Arrow kernels, plus one orjson call per value of a string column that holds
    a quote, a backslash or a control character.
    """
    if not columns:
        return [b"{}"] * batch.num_rows
    # With a first column free of NULLs every later field starts with a comma;
    # otherwise every field does and the leading comma of each row is cut off.
    solid_first = batch.column(columns[0]).null_count == 0
    pieces: list[pa.Array | pa.Scalar] = []
    text = "{" if solid_first else ""
    for position, (name, index) in enumerate(zip(names, columns, strict=True)):
        column = batch.column(index)
        values, quote = _values(column)
        values = values.cast(_TEXT)  # one string type for the join (large: no 2 GiB limit)
        head = ("" if position == 0 and solid_first else ",") + orjson.dumps(name).decode() + ":"
        if column.null_count:
            # one fragment per row, NULL (then left out) where the value is
            fragment = pc.binary_join_element_wise(
                _text(head + quote), values, _text(quote), _EMPTY
            )
            pieces += [_text(text), fragment]
            text = ""
        else:
            pieces += [_text(text + head + quote), values]
            text = quote
    pieces.append(_text(text + "}" if solid_first else text))
    joined = pc.binary_join_element_wise(
        *pieces, _EMPTY, null_handling="replace", null_replacement=""
    )
    if not solid_first:
        joined = pc.binary_join_element_wise(
            _text("{"), pc.utf8_slice_codeunits(joined, 1), _text("}"), _EMPTY
        )
    rows: list[bytes] = pc.cast(joined, pa.large_binary()).to_pylist()
    return rows


def _text(literal: str) -> pa.Scalar:
    return pa.scalar(literal, _TEXT)


def _values(column: pa.Array) -> tuple[pa.Array, str]:
    """The JSON text of each value of ``column`` and the quote around it (``"`` or none)."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        data = column.buffers()[2]
        if data is None or _NEEDS_ESCAPE.search(memoryview(data)) is None:
            return column, '"'
        escaped = [None if v is None else orjson.dumps(v).decode() for v in column.to_pylist()]
        return pa.array(escaped, _TEXT), ""
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "true", "false"), ""
    if pa.types.is_integer(kind):
        return pc.cast(column, pa.string()), ""
    if pa.types.is_float64(kind):
        return _doubles(column), ""
    raise TypeError(f"json_rows cannot render a column of {kind}")


def _doubles(column: pa.Array) -> pa.Array:
    """Doubles as JSON numbers that read back as doubles; non-finite ones as Spark's strings."""
    text = pc.cast(column, pa.string())  # shortest round-trip digits: "1", "0.5", "1e+21"
    looks_integral = pc.invert(pc.match_substring_regex(text, "[.e]"))
    text = pc.if_else(looks_integral, pc.binary_join_element_wise(text, ".0", ""), text)
    finite = pc.is_finite(column)
    if pc.all(finite).as_py() is False:
        spelled = pc.if_else(
            pc.is_nan(column),
            '"NaN"',
            pc.if_else(pc.greater(column, 0.0), '"Infinity"', '"-Infinity"'),
        )
        text = pc.if_else(finite, text, spelled)
    return text
