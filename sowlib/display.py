"""HTML views of stores, topics and query results for notebooks (``_repr_html_``).

Reads only public attributes and methods of what it renders, through small
protocols, so ``query``, ``store`` and ``topic`` can all delegate here: imports
``errors``, ``record`` and ``frames`` only. Every value is escaped with
``html.escape``; long values are cut.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from sowlib.errors import ArgumentError
from sowlib.frames import field_columns, table_rows
from sowlib.record import Record

__all__ = ["MAX_CHARS", "MAX_ROWS", "TOPIC_SAMPLE", "results_html", "store_html", "topic_html"]

#: Rows a result table shows.
MAX_ROWS = 20
#: Characters a cell shows before it is cut with an ellipsis.
MAX_CHARS = 80
#: Records a topic's view shows.
TOPIC_SAMPLE = 5

_STYLE = (
    "<style>.sowlib table{border-collapse:collapse}"
    ".sowlib th,.sowlib td{padding:2px 8px;text-align:left;vertical-align:top}"
    ".sowlib caption{text-align:left;font-weight:bold}"
    ".sowlib .meta{color:#666}</style>"
)


class TopicView(Protocol):
    """What :func:`topic_html` reads from a topic."""

    @property
    def name(self) -> str: ...

    @property
    def message_type(self) -> str: ...

    def __len__(self) -> int: ...

    def stats(self) -> dict[str, Any]: ...

    def sow(self, filter: Any = None, *, top_n: int | None = None) -> Sequence[Record]: ...


class StoreView(Protocol):
    """What :func:`store_html` reads from a store."""

    @property
    def path(self) -> str | None: ...

    @property
    def readonly(self) -> bool: ...

    def topics(self) -> Sequence[Any]: ...


def _limit(option: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(option, value, "expected a positive integer")
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="milliseconds")
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def _cell(value: Any, max_chars: int) -> str:
    text = _text(value)
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "\u2026"
    return html.escape(text, quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], max_chars: int) -> str:
    head = "".join(f"<th>{_cell(h, max_chars)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(v, max_chars)}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _size(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _records_table(records: Sequence[Record], max_chars: int) -> str:
    rows = table_rows(records)
    fields = field_columns(rows)
    columns = ["sow_key", "seq", *fields, "timestamp"]
    if any(row["expiration"] is not None for row in rows):
        columns.append("expiration")
    if len({row["topic"] for row in rows}) > 1:
        columns.append("topic")
    return _table(columns, ([row.get(c) for c in columns] for row in rows), max_chars)


def results_html(
    records: Sequence[Record],
    *,
    total: int | None = None,
    max_rows: int = MAX_ROWS,
    max_chars: int = MAX_CHARS,
) -> str:
    """An HTML table of the first ``max_rows`` records, with the total count.

    Columns: ``sow_key``, ``seq``, each field (nested fields flattened as
    ``leg.venue``), ``timestamp``, and ``expiration`` / ``topic`` when they say
    something. Values longer than ``max_chars`` are cut.

    Args:
        records: the records (a query result).
        total: the count to report; default ``len(records)``.
        max_rows: rows shown.
        max_chars: characters shown per cell.
    Returns:
        HTML text in which every value is escaped.
    Raises:
        QueryOptionError: ``max_rows`` or ``max_chars`` is not a positive integer.

    Example:
        >>> "0 records" in results_html([])
        True
    """
    body = _results_body(
        records, total, _limit("max_rows", max_rows), _limit("max_chars", max_chars)
    )
    return f'<div class="sowlib">{_STYLE}{body}</div>'


def _results_body(records: Sequence[Record], total: int | None, rows: int, width: int) -> str:
    shown = list(records[:rows])
    count = len(records) if total is None else total
    note = _plural(count, "record")
    if len(shown) < count:
        note += f", showing the first {len(shown)}"
    table = _records_table(shown, width) if shown else ""
    return f'{table}<p class="meta">{html.escape(note)}</p>'


def _config_rows(topic: TopicView, stats: Mapping[str, Any]) -> list[tuple[str, Any]]:
    config = getattr(topic, "config", None)
    rows: list[tuple[str, Any]] = [("records", len(topic))]
    if config is not None:
        keys = getattr(config, "keys", None)
        rows.append(("keys", ", ".join(keys) if keys else "sow_key supplied by the publisher"))
        for name in ("key_domain", "durability", "expiration_enabled", "default_ttl"):
            value = getattr(config, name, None)
            if value is not None:
                rows.append((name.replace("_", " "), value))
        if getattr(config, "history_window", None) is not None:
            rows.append(("history", config.history_window))
    indexes = stats.get("indexes")
    rows.append(("indexes", ", ".join(map(str, indexes)) if indexes else "none"))
    if stats.get("path"):
        rows.append(("file", stats["path"]))
        rows.append(("file size", _size(stats.get("file_bytes"))))
    if stats.get("last_seq") is not None:
        rows.append(("last seq", stats["last_seq"]))
    return rows


def topic_html(topic: TopicView, *, sample: int = TOPIC_SAMPLE, max_chars: int = MAX_CHARS) -> str:
    """An HTML view of a topic: its configuration, record count, indexes, a few records.

    Args:
        topic: the topic.
        sample: how many records to show.
        max_chars: characters shown per cell.
    Returns:
        HTML text in which every value is escaped.
    Raises:
        QueryOptionError: ``sample`` or ``max_chars`` is not a positive integer.
        StoreClosedError: the topic is closed.
    """
    sample = _limit("sample", sample)
    width = _limit("max_chars", max_chars)
    stats = topic.stats()
    title = f"Topic {topic.name!r} ({topic.message_type})"
    config = _table(["setting", "value"], _config_rows(topic, stats), max(width, 120))
    records = topic.sow(None, top_n=sample)
    results = _results_body(records, len(topic), sample, width)
    return (
        f'<div class="sowlib">{_STYLE}<p><b>{html.escape(title)}</b></p>{config}'
        f"<p>First records</p>{results}</div>"
    )


def store_html(store: StoreView, *, max_chars: int = MAX_CHARS) -> str:
    """An HTML view of a store: its path and each topic's count and file sizes.

    Args:
        store: the store.
        max_chars: characters shown per cell.
    Returns:
        HTML text in which every value is escaped.
    Raises:
        QueryOptionError: ``max_chars`` is not a positive integer.
        StoreClosedError: the store is closed.
    """
    width = _limit("max_chars", max_chars)
    topics = list(store.topics())
    rows = []
    for topic in topics:
        stats = topic.stats()
        rows.append(
            (
                topic.name,
                topic.message_type,
                len(topic),
                _size(stats.get("file_bytes")),
                _size(stats.get("used_bytes")),
                ", ".join(map(str, stats.get("indexes") or ())),
            )
        )
    headers = ["topic", "message type", "records", "file size", "used", "indexes"]
    mode = "read-only" if store.readonly else "writer"
    title = f"SowStore {store.path or '(in memory)'} ({mode})"
    note = _plural(len(topics), "topic")
    table = _table(headers, rows, width) if rows else ""
    return (
        f'<div class="sowlib">{_STYLE}<p><b>{html.escape(title)}</b></p>{table}'
        f'<p class="meta">{html.escape(note)}</p></div>'
    )
