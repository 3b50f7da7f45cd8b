"""Query results as table rows, pandas DataFrames and Arrow tables.

Columns are named by field (``orderId``, nested ``leg.venue``); the record's
metadata keeps clear names (``sow_key``, ``seq``, ``timestamp``, ``expiration``,
``topic``) and times are timezone-aware (UTC). Imports only ``record``; pandas
and pyarrow are imported when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sowlib.record import Record

__all__ = ["META_COLUMNS", "field_columns", "flatten", "table_rows", "to_arrow", "to_pandas"]

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
            frame[name] = pandas.to_datetime(frame[name], utc=True)
        elif name not in ("sow_key", "topic"):
            frame[name] = frame[name].infer_objects()
    return frame


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
