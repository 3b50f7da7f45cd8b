"""The ``sowlib`` command: verify, dump, stats, publish, compact, and (in ``cli_data``)
import, export, query, explain.

Built on click ([R]: the most used and longest kept of the Python CLI libraries, with
no dependency of its own; typer is click with type hints, one more layer and two
more dependencies for what the commands here need): options anywhere among the
arguments, per-command help, ``--version``. Sits on top of ``store`` and
``storage``; nothing imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

import click

from sowlib.buildinfo import VERSION
from sowlib.cli_data import add_commands
from sowlib.errors import UnknownTopicError
from sowlib.journal.repair import is_journal_dir, is_journal_file, verify_journal
from sowlib.progress import reporter
from sowlib.storage import AppendLog, RecordKind
from sowlib.storage.recovery import verify
from sowlib.store import SowStore

__all__ = ["MAX_MESSAGE", "main"]

#: Characters of an error message printed: a huge input quoted in it is cut here.
MAX_MESSAGE = 500


def _iso(seconds: float) -> str:
    if not seconds:
        return "0"
    stamp = datetime.fromtimestamp(seconds, tz=UTC)
    return stamp.strftime("%Y%m%dT%H%M%S.%fZ")


def _sow_files(target: str) -> list[str]:
    if os.path.isdir(target):
        found: list[str] = []
        for root, _dirs, files in os.walk(target):
            found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".sow"))
        return found
    return [target]


def _journal_dirs(target: str) -> list[str]:
    """Journal directories at or under ``target`` (a journal file stands for its own)."""
    if os.path.isfile(target):
        parent = os.path.dirname(os.path.abspath(target))
        return [parent] if is_journal_file(target) and is_journal_dir(parent) else []
    if not os.path.isdir(target):
        return []
    return [root for root, _dirs, _files in os.walk(target) if is_journal_dir(root)]


def _verify_journal(directory: str, args: argparse.Namespace, out: TextIO) -> int:
    report = verify_journal(directory, repair=args.repair)
    lost = [f"{low}-{high or '?'}" for low, high in report.lost_seqs]
    print(
        f"{directory}: {'ok' if report.ok else 'CORRUPT'} journal entries={report.entries}"
        f" last_seq={report.last_seq} damaged={report.damaged} lost_seqs={lost}"
        + (f" state={report.state_problem!r}" if report.state_problem else "")
        + (f" repaired (backups {list(report.backups)})" if report.repaired else ""),
        file=out,
    )
    return 1 if not report.ok and not args.repair else 0


def _cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    journals = _journal_dirs(args.target)
    status = max([0, *(_verify_journal(j, args, out) for j in journals)])
    whole = journals and (os.path.isfile(args.target) or os.path.samefile(journals[0], args.target))
    files = [] if whole else _sow_files(args.target)
    if not files and journals:
        return status
    if not files:
        print(f"no .sow files under {args.target}", file=out)
        return 1
    sizes = [os.path.getsize(p) for p in files]
    with reporter(bool(args.progress), total=sum(sizes), desc="verify", unit="B") as rep:
        for path, size in zip(files, sizes, strict=True):
            status = max(status, _verify_file(path, args, out))
            rep.advance(size)
    return status


def _verify_file(path: str, args: argparse.Namespace, out: TextIO) -> int:
    report = verify(path, repair=args.repair)
    state = "ok" if report.ok else "CORRUPT"
    at = report.open_error_offset
    opens = "yes" if at is None else f"no (CorruptRecordError at byte {at})"
    print(
        f"{path}: {state} records={report.records} last_seq={report.last_seq}"
        f" corrupt_offsets={list(report.corrupt_offsets)} torn_tail={report.torn_tail_bytes}"
        f" committed_end={report.committed_end} opens={opens}"
        + (f" repaired (backup {report.backup_path})" if report.repaired else ""),
        file=out,
    )
    return 1 if not report.ok and not args.repair else 0


def _cmd_dump(args: argparse.Namespace, out: TextIO) -> int:
    log = AppendLog(args.file, readonly=True)
    try:
        if not args.data_only:
            print(
                f"# file {args.file} generation {log.generation} records-end {log.end_offset}",
                file=out,
            )
        shown = 0
        for rec in log.scan():
            if args.limit is not None and shown >= args.limit:
                break
            shown += 1
            if args.data_only:
                if rec.kind == RecordKind.PUT:
                    out.write(rec.payload.decode("utf-8", "replace") + args.delimiter)
                continue
            fields = [
                f"offset={rec.offset}",
                f"seq={rec.seq}",
                f"kind={rec.kind.name}",
                f"key={rec.key}",
                f"timestamp={_iso(rec.timestamp)}",
                f"expiration={_iso(rec.expiration)}",
                f"size={len(rec.payload)}",
            ]
            if args.verbose and rec.correlation_id:
                fields.append(f"correlation_id={rec.correlation_id.decode('utf-8', 'replace')}")
            print(" ".join(fields), file=out)
            if args.verbose and rec.kind == RecordKind.PUT:
                print("  " + rec.payload.decode("utf-8", "replace"), file=out)
    finally:
        log.close()
    return 0


def _cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory, readonly=True) as store:
        print(json.dumps(store.stats(), indent=2, default=str), file=out)
    return 0


def _cmd_publish(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory) as store:
        topic = store.topic(args.topic, args.message_type)
        lines = args.messages or [line.rstrip("\n") for line in sys.stdin if line.strip()]
        for message in lines:
            result = topic.publish(message)
            print(f"{result.sow_key} seq={result.seq} inserted={result.inserted}", file=out)
    return 0


def _cmd_compact(args: argparse.Namespace, out: TextIO) -> int:
    with SowStore(args.directory) as store:
        topics = [t for t in store.topics() if not args.topic or t.name == args.topic]
        sizes = [int(t.stats()["used_bytes"]) for t in topics]
        with reporter(bool(args.progress), total=sum(sizes), desc="compact", unit="B") as rep:
            for topic, before in zip(topics, sizes, strict=True):
                topic.compact()
                after = topic.stats()["used_bytes"]
                print(f"{topic.name} ({topic.message_type}): {before} -> {after} bytes", file=out)
                rep.advance(before)
    return 0


def _cli_message(command: str, exc: BaseException) -> str:
    """The error's message as a shell user needs it: what to type instead of what to call."""
    if isinstance(exc, UnknownTopicError):
        kind = f" ({exc.message_type})" if exc.message_type else ""
        how = "sowlib import DIR TOPIC FILE --keys /field"
        if command == "publish":
            how = "sowlib import DIR TOPIC FILE --keys /field, then publish"
        return f"no SOW topic {exc.topic!r}{kind} in this store; create it with {how}"
    return str(exc)


def _fail(command: str, exc: BaseException) -> int:
    """Print the one line of a failed command (at most MAX_MESSAGE characters of the
    message) on standard error; returns the exit status, 2."""
    text = _cli_message(command, exc)
    # One line: filter errors carry a caret diagram on the following lines.
    first = text[: MAX_MESSAGE + 1].splitlines()[0] if text else ""
    if len(first) > MAX_MESSAGE:
        first = f"{first[:MAX_MESSAGE]}... ({len(text)} characters)"
    print(f"sowlib {command}: {type(exc).__name__}: {first}", file=sys.stderr)
    return 2


def _quiet_pipe() -> int:
    """Standard output's reader went away (``sowlib stats DIR | head``): stop quietly."""
    # the interpreter's last flush goes nowhere; no stdout to redirect is as good
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _runner(name: str, run: Callable[[argparse.Namespace, TextIO], int]) -> Callable[..., int]:
    """The click callback of a command: its options as a namespace, the exit status back."""

    def callback(**options: Any) -> int:
        out = click.get_current_context().find_root().obj or sys.stdout
        try:
            return int(run(argparse.Namespace(**options), out))
        except BrokenPipeError:  # the reader went away (``| head``): stop quietly
            return _quiet_pipe()
        except Exception as exc:  # a SowError, an OSError or anything else: one line, status 2
            return _fail(name, exc)

    return callback


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Run 'sowlib COMMAND --help' for a command's options. Exit status: 0 done, "
    "1 verify found damage, 2 bad input or any error (one line on standard error).",
)
@click.version_option(
    VERSION, "-V", "--version", prog_name="sowlib", message="%(prog)s %(version)s"
)
def cli() -> None:
    """Load, query, export and check sowlib stores (directories of SOW topics).

    \b
      sowlib import var/sow orders orders.jsonl --keys /orderId
      sowlib query var/sow orders "/price > 100" --top-n 5 --format table
      sowlib export var/sow orders -o orders.csv
    """


def _progress_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--progress/--no-progress",
        default=True,
        show_default=True,
        help="A progress bar on standard error (never in CI or without a terminal).",
    )(f)


@cli.command("verify", short_help="Check every record of a store, journal or file.")
@click.argument("target")
@click.option("--repair", is_flag=True, help="Salvage every intact record into a new file.")
@_progress_option
def _verify_command(**options: Any) -> int:
    """Check every record of TARGET: a store directory, a journal directory or a .sow
    file. Prints one line per file (ok or CORRUPT); exit status 1 on damage not
    repaired."""
    return _runner("verify", _cmd_verify)(**options)


@cli.command("dump", short_help="Print the records of a .sow file.")
@click.argument("file")
@click.option("-n", "--limit", type=click.IntRange(min=0), default=None, help="At most N records.")
@click.option("-v", "--verbose", is_flag=True, help="Payloads and metadata too.")
@click.option("--data-only", is_flag=True, help="Only the payloads of live versions.")
@click.option("-d", "--delimiter", default="\n", help="Delimiter for --data-only.")
def _dump_command(**options: Any) -> int:
    """Print the records of FILE (a topic's .sow file): offset, sequence, kind, key,
    timestamps and size, like the AMPS SOW dump utility."""
    return _runner("dump", _cmd_dump)(**options)


@cli.command("stats", short_help="Statistics of every topic, as JSON.")
@click.argument("directory")
def _stats_command(**options: Any) -> int:
    """Print the statistics of every topic of the store DIRECTORY as JSON."""
    return _runner("stats", _cmd_stats)(**options)


@cli.command("publish", short_help="Publish messages (arguments, or standard input lines).")
@click.argument("directory")
@click.argument("topic")
@click.argument("messages", nargs=-1)
@click.option("--message-type", default=None, help="The topic's message type (default json).")
def _publish_command(**options: Any) -> int:
    """Publish MESSAGES to TOPIC of the store DIRECTORY; without MESSAGES, each line of
    standard input is one message. Prints the SOW key and sequence of each."""
    return _runner("publish", _cmd_publish)(**options)


@cli.command("compact", short_help="Rewrite topic files with only live records.")
@click.argument("directory")
@click.option("--topic", default=None, help="Only this topic (default: every topic).")
@_progress_option
def _compact_command(**options: Any) -> int:
    """Rewrite the topic files of the store DIRECTORY with only their live records."""
    return _runner("compact", _cmd_compact)(**options)


add_commands(cli, _runner)


def _usage_error(exc: click.UsageError) -> int:
    command = exc.ctx.command_path if exc.ctx is not None else "sowlib"
    message = exc.format_message().replace("\n", " ")
    print(f"{command}: usage: {message} (see '{command} --help')", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (errors print one line, status 2).

    ``out`` receives what the commands print (default: standard output).
    """
    try:
        status = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="sowlib",
            standalone_mode=False,
            obj=out,
        )
    except click.UsageError as exc:
        return _usage_error(exc)
    except click.Abort:
        print("sowlib: aborted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _quiet_pipe()
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
