"""The data commands of ``sowlib``: import, export, query and explain.

Reading JSON lines and CSV into topics (through ``cli_input``), writing query results
as JSON lines, CSV, a text table or Parquet. Sits on top of ``store``, ``frames``,
``projection`` and ``progress``; only ``cli`` imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from sowlib import frames, projection
from sowlib.cli_input import FORMULA_LEAD, csv_cell, parse_cell, read_messages, unflatten
from sowlib.errors import ConfigError, UnknownTopicError
from sowlib.progress import ProgressArg, reporter
from sowlib.query import Record
from sowlib.store import SowStore

__all__ = [
    "FORMULA_LEAD",
    "add_commands",
    "csv_cell",
    "parse_cell",
    "read_messages",
    "unflatten",
]

#: Messages published per ``publish_many`` call by ``import``.
BATCH = 5_000
#: Characters a ``--format table`` cell shows.
TABLE_WIDTH = 30
_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv"}


# ----------------------------------------------------------------------------
# import


def _format_of(path: str, given: str | None) -> str:
    if given:
        return given
    fmt = _FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise ConfigError(path, "cannot tell the format from the name; pass --format jsonl|csv")
    return fmt


def _open_topic(store: SowStore, args: argparse.Namespace) -> Any:
    try:
        return store.topic(args.topic, args.message_type)
    except UnknownTopicError:
        if not args.keys:
            raise
        keys = [k.strip() for k in args.keys.split(",") if k.strip()]
        return store.create_topic(args.topic, keys=keys, message_type=args.message_type or "json")


def _cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    sources = [(p, _format_of(p, args.format)) for p in args.files]
    sizes = [0 if p == "-" else os.path.getsize(p) for p, _ in sources]
    total = None if "-" in args.files else sum(sizes)
    count = 0
    with SowStore(args.directory) as store:
        topic = _open_topic(store, args)
        with reporter(_progress(args), total=total, desc="import", unit="B") as rep:
            base = 0
            for (path, fmt), size in zip(sources, sizes, strict=True):
                with _open_input(path) as fh:
                    msgs = read_messages(
                        path, fh, fmt, message_type=topic.message_type, typed=args.typed
                    )
                    batch: list[Any] = []
                    for message in msgs:
                        batch.append(message)
                        if len(batch) >= BATCH:
                            topic.publish_many(batch)
                            count += len(batch)
                            batch = []
                            if path != "-":  # bytes read so far, read-ahead included
                                rep.update(base + min(fh.buffer.tell(), size))
                    if batch:
                        topic.publish_many(batch)
                        count += len(batch)
                base += size
                rep.update(base)
        store.flush()
    print(f"{args.topic}: imported {count} messages", file=out)
    return 0


def _open_input(path: str) -> Any:
    if path == "-":
        return contextlib.nullcontext(sys.stdin)
    return open(path, encoding="utf-8", newline="")


# ----------------------------------------------------------------------------
# export and query output


def _records(store: SowStore, args: argparse.Namespace) -> list[Record]:
    topic = store.topic(args.topic, args.message_type)
    return list(
        topic.sow(args.filter, order_by=args.order_by, top_n=args.top_n, skip_n=args.skip_n)
    )


def _docs(records: Sequence[Record], project: str | None) -> list[Any]:
    docs = [r.doc for r in records]
    return projection.project(docs, project) if project else docs


def _flat(doc: Any) -> dict[str, Any]:
    return frames.flatten(doc) if isinstance(doc, Mapping) else {"value": doc}


def _meta(rec: Record) -> dict[str, Any]:
    row = frames.table_rows([rec])[0]
    when = [row["timestamp"], row["expiration"]]
    stamp, expiry = (None if w is None else w.isoformat() for w in when)
    return {"sow_key": rec.sow_key, "seq": rec.seq, "timestamp": stamp, "expiration": expiry}


def _rows(records: Sequence[Record], docs: Sequence[Any], meta: bool) -> list[dict[str, Any]]:
    rows = []
    for rec, doc in zip(records, docs, strict=True):
        fields = _flat(doc)
        rows.append({**_meta(rec), **fields} if meta else fields)
    return rows


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for name in row:
            seen.setdefault(name, None)
    return list(seen)


def _write_csv(rows: Sequence[Mapping[str, Any]], out: TextIO) -> None:
    columns = _columns(rows)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(row[c]) if c in row else "" for c in columns])


def _write_jsonl(docs: Iterable[Any], out: TextIO) -> None:
    for doc in docs:
        if isinstance(doc, bytes):
            doc = doc.decode("utf-8", "replace")
        out.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")


def _write_table(rows: Sequence[Mapping[str, Any]], out: TextIO) -> None:
    columns = _columns(rows)

    def text(value: Any) -> str:
        shown = value if isinstance(value, str) else csv_cell(value)
        shown = shown.replace("\n", " ")
        return shown if len(shown) <= TABLE_WIDTH else shown[: TABLE_WIDTH - 1] + "\u2026"

    cells = [[text(row[c]) if c in row else "" for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(), file=out)
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip(), file=out)
    print(f"({len(rows)} records)", file=out)


def _write_parquet(records: Sequence[Record], meta: bool, target: str) -> None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("--format", "parquet needs pyarrow: pip install pyarrow") from None
    table = frames.to_arrow(records)
    if not meta:
        table = table.drop_columns([c for c in frames.META_COLUMNS if c in table.column_names])
    pq.write_table(table, target)


def _write_records(fmt: str, records: Sequence[Record], meta: bool, out: TextIO) -> None:
    if fmt == "csv":
        _write_csv(_rows(records, [r.doc for r in records], meta), out)
    else:
        _write_jsonl((r.doc for r in records), out)


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    fmt = args.format or (_FORMATS.get(os.path.splitext(args.output or "")[1].lower()))
    if fmt is None and (args.output or "").lower().endswith(".parquet"):
        fmt = "parquet"
    fmt = fmt or "jsonl"
    if fmt == "parquet" and not args.output:
        raise ConfigError("--output", "parquet is written to a file: pass -o FILE.parquet")
    if fmt == "jsonl" and args.with_meta:
        raise ConfigError("--with-meta", "metadata columns are for csv and parquet")
    with SowStore(args.directory, readonly=True) as store:
        records = _records(store, args)
    if fmt == "parquet":
        _write_parquet(records, args.with_meta, args.output)
    elif args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as fh:
            _write_records(fmt, records, args.with_meta, fh)
    else:
        _write_records(fmt, records, args.with_meta, out)
    if args.output:
        print(f"{args.topic}: exported {len(records)} records to {args.output}", file=out)
    return 0


def _cmd_query(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory, readonly=True) as store:
        records = _records(store, args)
    docs = _docs(records, args.project)
    if args.format == "jsonl":
        if args.project:
            _write_jsonl(docs, out)
        else:
            for rec in records:
                print(rec.data.decode("utf-8", "replace"), file=out)
        return 0
    rows = (
        [_flat(d) for d in docs]
        if args.project
        else _rows(records, [r.doc for r in records], meta=False)
    )
    (_write_csv if args.format == "csv" else _write_table)(rows, out)
    return 0


def _cmd_explain(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory, readonly=True) as store:
        plan = store.topic(args.topic, args.message_type).explain(args.filter)
        print(plan.describe(), file=out)
        print(
            f"kind={plan.kind} index={plan.index or '-'} estimated={plan.estimated}"
            f" exact={str(plan.exact).lower()}",
            file=out,
        )
    return 0


# ----------------------------------------------------------------------------
# the parsers


def _progress(args: argparse.Namespace) -> ProgressArg:
    return bool(args.progress)


def _query_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", help="the store directory")
    p.add_argument("topic")
    p.add_argument("filter", nargs="?", default=None, help="an AMPS filter")
    p.add_argument("--message-type", default=None)
    p.add_argument("--order-by", default=None, help='e.g. "/price DESC"')
    p.add_argument("--top-n", type=int, default=None)
    p.add_argument("--skip-n", type=int, default=None)


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (default: a bar when a terminal is watching)."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a progress bar on standard error (never in CI or without a terminal)",
    )


def add_commands(sub: Any) -> None:
    """Add ``import``, ``export``, ``query`` and ``explain`` to the ``sowlib`` parser."""
    p = sub.add_parser("import", help="publish JSON lines or CSV files into a topic")
    p.add_argument("directory", help="the store directory")
    p.add_argument("topic")
    p.add_argument("files", nargs="+", help="input files; - reads standard input")
    p.add_argument("--format", choices=["jsonl", "csv"], default=None)
    p.add_argument("--message-type", default=None)
    p.add_argument("--keys", default=None, help="key paths to create the topic, e.g. /id,/region")
    p.add_argument(
        "--csv-text",
        dest="typed",
        action="store_false",
        help="keep every CSV cell as text (default: cells that parse as JSON are JSON values)",
    )
    add_progress_option(p)
    p.set_defaults(run=_cmd_import)

    p = sub.add_parser("export", help="write a topic's records as JSON lines, CSV or Parquet")
    _query_options(p)
    p.add_argument("-o", "--output", default=None, help="output file (default: standard output)")
    p.add_argument("--format", choices=["jsonl", "csv", "parquet"], default=None)
    p.add_argument(
        "--with-meta", action="store_true", help="csv/parquet: add sow_key, seq, timestamps"
    )
    p.set_defaults(run=_cmd_export)

    p = sub.add_parser("query", help="print the records matching an AMPS filter")
    _query_options(p)
    p.add_argument("--format", choices=["jsonl", "table", "csv"], default="jsonl")
    p.add_argument("--project", default=None, help='a JMESPath projection, e.g. "{id: orderId}"')
    p.set_defaults(run=_cmd_query)

    p = sub.add_parser("explain", help="say which index a query would use")
    p.add_argument("directory", help="the store directory")
    p.add_argument("topic")
    p.add_argument("filter", nargs="?", default=None)
    p.add_argument("--message-type", default=None)
    p.set_defaults(run=_cmd_explain)
