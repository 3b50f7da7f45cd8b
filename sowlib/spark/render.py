"""Rows of flat Arrow record batches as JSON objects, rendered a column at a time.

:class:`~sowlib.spark.sink.SowSink`'s fast path: instead of Spark's ``to_json`` in the
JVM, the driver receives the plain columns and joins their text with Arrow compute
kernels, so the per-row cost is a few C-level string copies. Only flat rows of
strings, booleans, integers and doubles take it (:func:`renders`); every other
schema keeps Spark's rendering. The result is the JSON ``to_json`` writes, NULL
fields left out, with one difference of spelling and none of value: a double is
written in its shortest round-trip form (``10000000.0`` where Spark writes
``1.0E7``). Non-finite doubles are the strings Spark writes (``"NaN"``,
``"Infinity"``, ``"-Infinity"``), and bytes of a string that are not UTF-8 become
U+FFFD as in Spark. Imports pyarrow, pyspark's types and orjson (json without it);
nothing from sowlib.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import ModuleType

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is in the spark extra
    orjson = None

__all__ = ["is_valid_utf8", "json_rows", "renders"]

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
#: Every byte a JSON string holds as it is (a column with any other is escaped by orjson).
_AS_IS = bytes(sorted(set(range(256)) - {*range(0x20), ord('"'), ord("\\")}))
#: Longest JSON text of one number value, and the room each field takes besides it.
_NUMBER_ROOM = 26
#: Rows that could take this many bytes are joined with 64-bit offsets.
_LARGE_AT = 2**31


def renders(fields: Sequence[T.StructField]) -> bool:
    """Whether :func:`json_rows` renders rows of these columns (flat and simple types)."""
    return all(isinstance(f.dataType, _PLAIN) for f in fields)


def json_rows(batch: pa.RecordBatch, names: Sequence[str], columns: Sequence[int]) -> list[bytes]:
    """Each row of ``batch`` as a JSON object of ``columns`` (indexes), named ``names``.

    NULL values leave their field out; ``columns`` must pass :func:`renders`. O(bytes)
    in Arrow kernels, plus one orjson call per value of a string column that holds
    a quote, a backslash, a control character or bytes that are not UTF-8.
    """
    if not columns:
        return [b"{}"] * batch.num_rows
    heads = [_dumps(name) + ":" for name in names]
    # Joined as 32-bit-offset text unless the rows could outgrow it (6 bytes per
    # byte: a control character escaped as \u00XX).
    room = batch.nbytes * 6 + batch.num_rows * sum(len(h) + _NUMBER_ROOM for h in heads)
    kind = pa.large_string() if room >= _LARGE_AT else pa.string()
    # With a first column free of NULLs every later field starts with a comma;
    # otherwise every field does and the leading comma of each row is cut off.
    solid_first = batch.column(columns[0]).null_count == 0
    pieces: list[pa.Array | pa.Scalar] = []
    text = "{" if solid_first else ""
    for position, (head, index) in enumerate(zip(heads, columns, strict=True)):
        column = batch.column(index)
        values, quote = _values(column, kind)
        head = ("" if position == 0 and solid_first else ",") + head
        if column.null_count:
            # one fragment per row, NULL (then left out) where the value is
            empty = pa.scalar("", kind)
            fragment = pc.binary_join_element_wise(
                pa.scalar(head + quote, kind), values, pa.scalar(quote, kind), empty
            )
            pieces += [pa.scalar(text, kind), fragment]
            text = ""
        else:
            pieces += [pa.scalar(text + head + quote, kind), values]
            text = quote
    pieces.append(pa.scalar(text + "}" if solid_first else text, kind))
    empty = pa.scalar("", kind)
    joined = pc.binary_join_element_wise(
        *pieces, empty, null_handling="replace", null_replacement=""
    )
    if not solid_first:
        joined = pc.binary_join_element_wise(
            pa.scalar("{", kind), pc.utf8_slice_codeunits(joined, 1), pa.scalar("}", kind), empty
        )
    binary = pa.large_binary() if kind == pa.large_string() else pa.binary()
    rows: list[bytes] = joined.cast(binary).to_pylist()
    return rows


def _values(column: pa.Array, kind: pa.DataType) -> tuple[pa.Array, str]:
    """The JSON text (as ``kind``) of each value of ``column`` and the quote around it."""
    arrow = column.type
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        valid = is_valid_utf8(column)
        data = column.buffers()[2]
        if valid and (data is None or not data.to_pybytes().translate(None, _AS_IS)):
            return column.cast(kind), '"'
        # Escape value by value; bytes that are not UTF-8 (a Spark string may hold
        # them) become U+FFFD, as they do when Spark turns the string into Java text.
        raw = column.cast(pa.large_binary() if arrow == pa.large_string() else pa.binary())
        escaped = [
            None if v is None else _dumps(v.decode("utf-8", "replace")) for v in raw.to_pylist()
        ]
        return pa.array(escaped, kind), ""
    if pa.types.is_boolean(arrow):
        return pc.if_else(column, pa.scalar("true", kind), pa.scalar("false", kind)), ""
    if pa.types.is_integer(arrow):
        return column.cast(kind), ""
    if pa.types.is_float64(arrow):
        return _doubles(column).cast(kind), ""
    raise TypeError(f"json_rows cannot render a column of {arrow}")


def is_valid_utf8(column: pa.Array) -> bool:
    """Whether every value of a string ``column`` is well-formed UTF-8; O(bytes)."""
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _dumps(text: str) -> str:
    """``text`` as a JSON string literal (quotes, backslashes and controls escaped)."""
    if orjson is not None:
        return str(orjson.dumps(text).decode())
    return json.dumps(text, ensure_ascii=False)


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
