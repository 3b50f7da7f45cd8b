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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

import click

from sowlib import frames, projection
from sowlib.cli_input import FORMULA_LEAD, csv_cell, parse_cell, read_messages, unflatten
from sowlib.errors import ConfigError, UnknownTopicError
from sowlib.progress import ProgressArg, reporter, track
from sowlib.query import Record
from sowlib.store import SowStore

__all__ = [
    "FORMULA_LEAD",
    "OUTPUT_FORMATS",
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


def _parquet_table(records: Sequence[Record], meta: bool) -> Any:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise ConfigError("--format", "parquet needs pyarrow: pip install pyarrow") from None
    table = frames.to_arrow(records)
    if not meta:
        table = table.drop_columns([c for c in frames.META_COLUMNS if c in table.column_names])
    return table


def _write_parquet(table: Any, target: Any) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, target)


def _binary_stdout(out: TextIO) -> Any:
    """Standard output's bytes for parquet, when it is redirected to a file or a pipe."""
    buffer = getattr(out, "buffer", None)
    if buffer is None or out.isatty():
        raise ConfigError(
            "--format", "parquet is binary: redirect standard output, or use export -o FILE.parquet"
        )
    return buffer


def _write_json(docs: Iterable[Any], out: TextIO) -> None:
    items = [d.decode("utf-8", "replace") if isinstance(d, bytes) else d for d in docs]
    out.write(json.dumps(items, ensure_ascii=False, indent=2, default=str) + "\n")


def _write_records(
    fmt: str, records: Sequence[Record], meta: bool, out: TextIO, progress: ProgressArg
) -> None:
    # a record's document is decoded when first read: the step the bar follows
    docs = [r.doc for r in track(records, progress, desc="export", unit="records")]
    if fmt in ("csv", "table"):
        rows = _rows(records, docs, meta)
        (_write_csv if fmt == "csv" else _write_table)(rows, out)
    elif fmt == "json":
        _write_json(docs, out)
    else:
        _write_jsonl(docs, out)


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    fmt = args.format or (_FORMATS.get(os.path.splitext(args.output or "")[1].lower()))
    if fmt is None and (args.output or "").lower().endswith(".parquet"):
        fmt = "parquet"
    fmt = fmt or "jsonl"
    if fmt in ("jsonl", "json") and args.with_meta:
        raise ConfigError("--with-meta", "metadata columns are for csv, table and parquet")
    with SowStore(args.directory, readonly=True) as store:
        records = _records(store, args)
    if fmt == "parquet":
        table = _parquet_table(records, args.with_meta)
        _write_parquet(table, args.output or _binary_stdout(out))
    elif args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as fh:
            _write_records(fmt, records, args.with_meta, fh, _progress(args))
    else:
        _write_records(fmt, records, args.with_meta, out, _progress(args))
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
    if args.format == "json":
        _write_json(docs, out)
        return 0
    rows = (
        [_flat(d) for d in docs]
        if args.project
        else _rows(records, [r.doc for r in records], meta=False)
    )
    if args.format == "parquet":
        import pyarrow as pa

        table = pa.Table.from_pylist(rows) if args.project else _parquet_table(records, False)
        _write_parquet(table, _binary_stdout(out))
        return 0
    (_write_csv if args.format == "csv" else _write_table)(rows, out)
    return 0


def _cmd_explain(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory, readonly=True) as store:
        plan = store.topic(args.topic, args.message_type).explain(args.filter)
        print(plan.describe(), file=out)
        print(
            f"kind={plan.kind} index={plan.index or '-'} estimated={plan.estimated}"
            f" count={plan.count} exact={str(plan.exact).lower()}",
            file=out,
        )
    return 0


# ----------------------------------------------------------------------------
# the commands (click; ``cli`` makes the group)

#: What ``query`` and ``export`` write.
OUTPUT_FORMATS = ("jsonl", "json", "csv", "table", "parquet")
Runner = Callable[[str, Callable[[argparse.Namespace, TextIO], int]], Callable[..., int]]


def _progress(args: argparse.Namespace) -> ProgressArg:
    return bool(args.progress)


def _query_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--skip-n", type=int, default=None, help="Skip N records first.")(f)
    f = click.option("--top-n", type=int, default=None, help="At most N records.")(f)
    f = click.option("--order-by", default=None, help='Sort, e.g. "/price DESC, /id".')(f)
    f = click.option("--message-type", default=None, help="The topic's message type.")(f)
    f = click.argument("filter", required=False, default=None)(f)
    f = click.argument("topic")(f)
    return click.argument("directory")(f)


def add_commands(group: click.Group, runner: Runner) -> None:
    """Add ``import``, ``export``, ``query`` and ``explain`` to the ``sowlib`` group;
    ``runner(name, run)`` makes each command's callback."""

    @group.command("import", short_help="Publish JSON lines or CSV files into a topic.")
    @click.argument("directory")
    @click.argument("topic")
    @click.argument("files", nargs=-1, required=True)
    @click.option(
        "--format",
        type=click.Choice(["jsonl", "csv"]),
        default=None,
        help="The files' format (default: from each file's extension).",
    )
    @click.option("--message-type", default=None, help="The topic's message type.")
    @click.option(
        "--keys",
        default=None,
        help="Key paths that create the topic when it does not exist, e.g. /id,/region.",
    )
    @click.option(
        "--csv-text",
        "typed",
        flag_value=False,
        default=True,
        help="Keep every CSV cell as text (default: cells that parse as JSON are JSON).",
    )
    @click.option(
        "--progress/--no-progress",
        default=True,
        show_default=True,
        help="A progress bar on standard error (never in CI or without a terminal).",
    )
    def import_command(**options: Any) -> int:
        """Publish the messages of FILES (JSON lines or CSV; - reads standard input) into
        TOPIC of the store DIRECTORY, in batches of 5,000."""
        return runner("import", _cmd_import)(**options)

    @group.command("export", short_help="Write a topic's records as JSON, CSV or Parquet.")
    @_query_options
    @click.option("-o", "--output", default=None, help="Output file (default: standard output).")
    @click.option(
        "--format",
        type=click.Choice(OUTPUT_FORMATS),
        default=None,
        help="Output format (default: from the output file's extension, else jsonl).",
    )
    @click.option(
        "--with-meta", is_flag=True, help="csv/table/parquet: add sow_key, seq and the timestamps."
    )
    @click.option(
        "--progress/--no-progress",
        default=True,
        show_default=True,
        help="A progress bar on standard error (never in CI or without a terminal).",
    )
    def export_command(**options: Any) -> int:
        """Write the records of TOPIC in the store DIRECTORY matching FILTER (an AMPS
        filter; all when absent) as their documents."""
        return runner("export", _cmd_export)(**options)

    @group.command("query", short_help="Print the records matching an AMPS filter.")
    @_query_options
    @click.option(
        "--format",
        type=click.Choice(OUTPUT_FORMATS),
        default="jsonl",
        show_default=True,
        help="jsonl prints the stored messages; parquet needs a redirect.",
    )
    @click.option("--project", default=None, help='A JMESPath projection, e.g. "{id: orderId}".')
    def query_command(**options: Any) -> int:
        """Print the records of TOPIC in the store DIRECTORY matching FILTER (an AMPS
        filter such as "/price > 100"; all when absent). Options may come before or
        after FILTER."""
        return runner("query", _cmd_query)(**options)

    @group.command("explain", short_help="Say which index a query would use.")
    @click.argument("directory")
    @click.argument("topic")
    @click.argument("filter", required=False, default=None)
    @click.option("--message-type", default=None, help="The topic's message type.")
    def explain_command(**options: Any) -> int:
        """Say which plan a query of TOPIC with FILTER would use: the index, the estimated
        candidates, and whether the index answers the filter exactly."""
        return runner("explain", _cmd_explain)(**options)
