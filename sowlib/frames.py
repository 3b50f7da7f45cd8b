"""Query results as table rows, pandas DataFrames and Arrow tables; DataFrames and
pandas/numpy values as messages.

Columns are named by field (``orderId``, nested ``leg.venue``); the record's
metadata keeps clear names (``sow_key``, ``seq``, ``timestamp``, ``expiration``,
``topic``) and times are timezone-aware (UTC). Imports only ``errors`` and ``record``; pandas
and pyarrow are imported when asked for.

The way in ([R], docs/notebooks.md "pandas in and out"): :func:`plain` turns the
scalars pandas and numpy hand out into what every codec holds — numpy ints, floats
and bools into ``int``/``float``/``bool``, datetimes (``datetime``,
``pd.Timestamp``, ``numpy.datetime64``) into their ISO 8601 text as
``datetime.isoformat`` writes it (a zone only when the value has one, as orjson
writes a ``datetime``), dates into ``YYYY-MM-DD``, durations into seconds
(``float``), arrays into lists, and the missing markers ``NaT``/``pd.NA`` into
null. :func:`frame_messages` makes one message per DataFrame row with a field per
column, leaving out the cells that are missing (None, NaN, NaT, NA), so a frame
with gaps publishes documents without those fields.

The way out: a field column whose values are all ISO 8601 date-times
(``2024-03-01T09:00:00``, with seconds, optional fraction) becomes
``datetime64[ns, UTC]`` when every value names its zone, ``datetime64[ns]`` when
none does; anything else stays as it is.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sowlib.errors import ArgumentError
from sowlib.record import Record

__all__ = [
    "META_COLUMNS",
    "field_columns",
    "flatten",
    "frame_messages",
    "is_frame",
    "plain",
    "table_rows",
    "to_arrow",
    "to_pandas",
]

#: The metadata columns, first in every table, in this order.
META_COLUMNS = ("sow_key", "seq", "timestamp", "expiration", "topic")

#: Nesting deeper than this stays one column holding the remaining object, so a
#: pathological document cannot make a table with unbounded column names.
_MAX_DEPTH = 32


def flatten(doc: Any) -> dict[str, Any]:
    """A document's fields as one flat mapping: nested objects joined with dots.

    Arrays and scalars are values; an empty object is a value too. A document that
    is not an object (a binary payload, a bare value) becomes ``{"data": doc}``.

    Example:
        >>> flatten({"id": 1, "leg": {"venue": "X", "px": 2}})
        {'id': 1, 'leg.venue': 'X', 'leg.px': 2}
    """
    if not isinstance(doc, Mapping):
        return {"data": doc}
    out: dict[str, Any] = {}
    _flatten_into(out, doc, "", 0)
    return out


def _flatten_into(out: dict[str, Any], doc: Mapping[Any, Any], prefix: str, depth: int) -> None:
    for name, value in doc.items():
        column = f"{prefix}{name}"
        if isinstance(value, Mapping) and value and depth < _MAX_DEPTH:
            _flatten_into(out, value, column + ".", depth + 1)
        else:
            out[column] = value


def _when(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _field_column(name: str) -> str:
    # A field spelled like a metadata column keeps its AMPS path spelling, so neither hides.
    return f"/{name}" if name in META_COLUMNS else name


def table_rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    """One flat dict per record: the metadata columns, then the flattened fields.

    ``timestamp`` and ``expiration`` are UTC datetimes (``expiration`` None when
    the record never expires). A field named like a metadata column is kept
    under its path (``/seq``).
    """
    out = []
    for rec in records:
        row: dict[str, Any] = {
            "sow_key": rec.sow_key,
            "seq": rec.seq,
            "timestamp": _when(rec.timestamp),
            "expiration": _when(rec.expiration),
            "topic": rec.topic,
        }
        for name, value in flatten(rec.doc).items():
            row[_field_column(name)] = value
        out.append(row)
    return out


def field_columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The non-metadata column names of ``rows``, in first-seen order."""
    seen: dict[str, None] = {}
    for row in rows:
        for name in row:
            if name not in META_COLUMNS:
                seen.setdefault(name, None)
    return list(seen)


def _columns(records: Iterable[Record]) -> tuple[list[str], dict[str, list[Any]]]:
    rows = table_rows(records)
    names = [*META_COLUMNS, *field_columns(rows)]
    return names, {name: [row.get(name) for row in rows] for name in names}


def to_pandas(records: Iterable[Record]) -> Any:
    """A ``pandas.DataFrame`` of :func:`table_rows` (needs pandas).

    ``timestamp`` and ``expiration`` are ``datetime64[ns, UTC]`` (NaT: never
    expires); a field absent from a record is missing (NaN/None) in its row.

    Raises:
        ImportError: pandas is not installed.
    """
    try:
        import pandas
    except ImportError as exc:
        raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
    names, data = _columns(records)
    frame = pandas.DataFrame({name: pandas.Series(data[name], dtype=object) for name in names})
    for name in names:
        if name in ("timestamp", "expiration"):
            frame[name] = pandas.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
        elif name == "seq":
            frame[name] = frame[name].astype("int64")
        elif name not in ("sow_key", "topic"):
            frame[name] = _typed_column(pandas, frame[name].infer_objects())
    return frame


# ISO 8601 date-time text: a date, "T", a time with seconds, an optional fraction and zone.
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?"
)


def _typed_column(pandas: Any, column: Any) -> Any:
    """``column`` as datetimes when its values are all ISO 8601 date-time text (see the
    module's rule), else ``column`` itself."""
    if column.dtype != object:
        return column
    values = column.dropna()
    if values.empty:
        return column
    zoned = None
    for value in values:
        if type(value) is not str or (found := _ISO_DATETIME.fullmatch(value)) is None:
            return column
        has_zone = found.group(1) is not None
        if zoned is None:
            zoned = has_zone
        elif zoned != has_zone:
            return column  # naive and zoned text mixed: no one type holds both
    try:
        return pandas.to_datetime(column, format="ISO8601", utc=bool(zoned))
    except (ValueError, OverflowError):  # out of datetime64[ns]'s range: keep the text
        return column


def is_frame(value: object) -> bool:
    """Whether ``value`` is a ``pandas.DataFrame`` (pandas is not imported for this)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def _missing(value: object) -> bool:
    if value is None or (type(value) is float and math.isnan(value)):
        return True
    pandas = sys.modules.get("pandas")
    if pandas is not None and (value is pandas.NaT or value is pandas.NA):
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.floating):
            return bool(numpy.isnan(value))
        if isinstance(value, numpy.datetime64 | numpy.timedelta64):
            return bool(numpy.isnat(value))
    return False


def plain(value: Any) -> Any:
    """``value`` with pandas and numpy scalars, datetimes and durations made plain (the
    module's rule), in nested dicts and lists too; other values are returned as they are.

    Example:
        >>> from datetime import datetime
        >>> plain({"at": datetime(2024, 3, 1, 9), "n": [1, 2.5]})
        {'at': '2024-03-01T09:00:00', 'n': [1, 2.5]}
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if _missing(value):
        return None
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.ndarray):
            return [plain(v) for v in value.tolist()]
        if isinstance(value, numpy.datetime64):
            return _datetime64_text(numpy, value)
        if isinstance(value, numpy.timedelta64):
            return float(value / numpy.timedelta64(1, "ns")) / 1e9
        if isinstance(value, numpy.generic):
            return value.item()
    return value


def _datetime64_text(numpy: Any, value: Any) -> str:
    """A ``numpy.datetime64`` as ``datetime.isoformat`` writes the same time: a date for
    a value in days or coarser, else seconds and a fraction of 6 or 9 digits if any."""
    unit = numpy.datetime_data(value.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        return str(numpy.datetime_as_string(value.astype("datetime64[D]")))
    text = str(numpy.datetime_as_string(value, unit="s" if unit in ("h", "m", "s") else unit))
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    if not fraction:
        return whole
    return f"{whole}.{fraction.ljust(6 if len(fraction) <= 6 else 9, '0')[:9]}"


def frame_messages(frame: Any) -> list[dict[str, Any]]:
    """One message (a dict) per row of a ``pandas.DataFrame``: a field per column, named
    as the column (as text), values made :func:`plain`; a missing cell is no field.

    Raises:
        ArgumentError: two columns with the same name.
    """
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        twice = sorted({c for c in columns if columns.count(c) > 1})
        raise ArgumentError("messages", twice, "a DataFrame whose column names are unique")
    out = []
    for row in frame.itertuples(index=False, name=None):
        message = {}
        for name, value in zip(columns, row, strict=True):
            if not _missing(value):
                message[name] = plain(value)
        out.append(message)
    return out


def _arrow_column(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        # Mixed kinds in one field (a number here, text there): JSON text keeps each value.
        return pa.array(
            [None if v is None else json.dumps(v, default=str) for v in values], pa.string()
        )


def to_arrow(records: Iterable[Record]) -> Any:
    """A ``pyarrow.Table`` of :func:`table_rows` (needs pyarrow).

    ``timestamp`` and ``expiration`` are ``timestamp[us, tz=UTC]``; a field whose
    values have mixed kinds becomes a string column of their JSON text.

    Raises:
        ImportError: pyarrow is not installed.
    """
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise ImportError("to_arrow() needs pyarrow: pip install pyarrow") from exc
    names, data = _columns(records)
    arrays = []
    for name in names:
        if name in ("timestamp", "expiration"):
            arrays.append(pa.array(data[name], pa.timestamp("us", tz="UTC")))
        elif name in ("sow_key", "topic"):
            arrays.append(pa.array(data[name], pa.string()))
        elif name == "seq":
            arrays.append(pa.array(data[name], pa.int64()))
        else:
            arrays.append(_arrow_column(pa, data[name]))
    return pa.Table.from_arrays(arrays, names=names)
