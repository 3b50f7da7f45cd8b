"""Reading the input files of ``sowlib import`` by ``publish``'s rules, and the CSV cells
``export`` writes so that they read back.

JSON lines and CSV become messages lazily; a line that is not JSON (NaN included), not
UTF-8 or nested too deeply, a bad CSV row, is a ``DecodeError`` naming the file and
line. Imports only ``errors``; ``cli_data`` uses it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from sowlib.errors import ConfigError, DecodeError

__all__ = ["FORMULA_LEAD", "csv_cell", "parse_cell", "read_messages", "unflatten"]

#: Characters that make a spreadsheet read a cell as a formula (``=HYPERLINK(...)``):
#: ``export`` writes a text cell starting with one (after any quotes) with a ``'`` in front.
FORMULA_LEAD = frozenset("=+-@\t\r")
# A bad input line is quoted in an error up to this many characters.
_QUOTE = 200


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (publish refuses it)")


def _loads(text: str) -> Any:
    """``json.loads`` by publish's rules: no NaN or Infinity."""
    return json.loads(text, parse_constant=_no_constant)


def _formula_like(text: str) -> bool:
    rest = text.lstrip("'")
    return bool(rest) and rest[0] in FORMULA_LEAD


# ----------------------------------------------------------------------------
# cells: CSV holds JSON values where they parse as JSON, text otherwise


def csv_cell(value: Any) -> str:
    """The CSV text of a field value; :func:`parse_cell` gives the value back.

    Text is written as it is unless it would read back as something else (it
    parses as JSON, is empty or holds a carriage return): then it is written as a JSON
    string literal. Text a
    spreadsheet would run as a formula (its first character after any ``'`` is in
    :data:`FORMULA_LEAD`) gets one more ``'`` in front, which :func:`parse_cell` removes.
    """
    if isinstance(value, str):
        # A carriage return is written escaped inside a JSON literal: a bare one in an
        # unquoted CSV field does not read back.
        if value == "" or "\r" in value or _parses(value):
            return json.dumps(value, ensure_ascii=False)
        return "'" + value if _formula_like(value) else value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _parses(text: str) -> bool:
    try:
        _loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def parse_cell(text: str) -> Any:
    """The value of a CSV cell: its JSON value when it parses as JSON, else the text.

    ``NaN`` and ``Infinity`` are text (publish refuses them as numbers); the ``'``
    :func:`csv_cell` puts before formula-like text is removed.
    """
    try:
        return _loads(text)
    except (ValueError, RecursionError):
        return text[1:] if text.startswith("'") and _formula_like(text[1:]) else text


def unflatten(row: Mapping[str, Any]) -> dict[str, Any]:
    """``{"leg.venue": "X"}`` -> ``{"leg": {"venue": "X"}}``.

    Raises:
        ValueError: a column names a field inside a value that is not an object.
    """
    doc: dict[str, Any] = {}
    for column, value in row.items():
        *parents, name = column.split(".")
        node = doc
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"column {column!r}: {part!r} is not an object")
            node = child
        if isinstance(node.get(name), dict):
            raise ValueError(f"column {column!r} is also an object")
        node[name] = value
    return doc


def _bad_line(path: str, line: int, reason: object, data: str) -> DecodeError:
    quoted = data if len(data) <= _QUOTE else f"{data[:_QUOTE]}... ({len(data)} characters)"
    return DecodeError("json", quoted, f"{path} line {line}: {str(reason)[:_QUOTE]}")


def _lines(path: str, fh: TextIO) -> Iterator[tuple[int, str]]:
    """The numbered lines of ``fh``; a byte sequence that is not UTF-8 is a DecodeError."""
    number, lines = 0, iter(fh)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise _bad_line(path, number + 1, f"not UTF-8: {exc.reason}", "") from None
        number += 1
        yield number, line


def _jsonl(path: str, fh: TextIO, parse: bool) -> Iterator[Any]:
    for number, line in _lines(path, fh):
        text = line.strip()
        if not text:
            continue
        if not parse:
            yield text
            continue
        try:
            yield _loads(text)
        except ValueError as exc:
            raise _bad_line(path, number, exc, text) from None
        except RecursionError:
            raise _bad_line(path, number, "nests too deep", text) from None


def _csv_rows(path: str, reader: csv.DictReader[str]) -> Iterator[dict[str, str]]:
    """The rows of ``reader``; a bad CSV row or a byte that is not UTF-8 is a DecodeError."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise _bad_line(path, reader.line_num, reason, "") from None
        yield row


def _csv(path: str, fh: TextIO, typed: bool) -> Iterator[dict[str, Any]]:
    reader = csv.DictReader(fh)
    for row in _csv_rows(path, reader):
        if None in row or any(v is None for v in row.values()):
            raise _bad_line(path, reader.line_num, "the row has another number of cells", "")
        cells = {k: (parse_cell(v) if typed else v) for k, v in row.items() if v != ""}
        try:
            yield unflatten(cells)
        except ValueError as exc:
            raise _bad_line(path, reader.line_num, exc, "") from None


def read_messages(
    path: str, fh: TextIO, fmt: str, *, message_type: str = "json", typed: bool = True
) -> Iterator[Any]:
    """The messages of one open input file, lazily (``path`` names it in errors).

    JSON lines give one message per non-blank line (parsed for JSON topics, text
    otherwise); CSV gives one JSON object per row, its header naming the fields
    (``leg.venue`` nests), cells read by :func:`parse_cell` (``typed=False``:
    every cell stays text), empty cells left out.

    Raises:
        DecodeError: a line that is not JSON, a ragged CSV row (naming file and line).
        ConfigError: CSV into a topic that is not JSON.
    """
    if fmt == "csv" and message_type != "json":
        raise ConfigError("--format", f"CSV rows become JSON objects, not {message_type}")
    return _csv(path, fh, typed) if fmt == "csv" else _jsonl(path, fh, message_type == "json")
