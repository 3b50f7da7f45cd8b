"""The ``sowlib`` command: verify, dump, stats, publish, compact, and (in ``cli_data``)
import, export, query, explain.

Sits on top of ``store`` and ``storage``; nothing imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from sowlib.buildinfo import VERSION
from sowlib.cli_data import add_commands, add_progress_option
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sowlib", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sowlib {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("verify", help="check every record of a store, journal or file")
    p.add_argument("target", help="a store directory, a journal directory or a .sow file")
    p.add_argument("--repair", action="store_true", help="salvage every intact record")
    add_progress_option(p)
    p.set_defaults(run=_cmd_verify)

    p = sub.add_parser("dump", help="print the records of a .sow file")
    p.add_argument("file")
    p.add_argument("-n", "--limit", type=int, default=None, help="at most N records")
    p.add_argument("-v", "--verbose", action="store_true", help="payloads and metadata")
    p.add_argument("--data-only", action="store_true", help="only the payloads of live versions")
    p.add_argument("-d", "--delimiter", default="\n", help="delimiter for --data-only")
    p.set_defaults(run=_cmd_dump)

    p = sub.add_parser("stats", help="statistics of every topic")
    p.add_argument("directory")
    p.set_defaults(run=_cmd_stats)

    p = sub.add_parser("publish", help="publish messages (arguments or stdin lines)")
    p.add_argument("directory")
    p.add_argument("topic")
    p.add_argument("--message-type", default=None)
    p.add_argument("messages", nargs="*")
    p.set_defaults(run=_cmd_publish)

    add_commands(sub)

    p = sub.add_parser("compact", help="rewrite topic files with only live records")
    p.add_argument("directory")
    p.add_argument("--topic", default=None)
    add_progress_option(p)
    p.set_defaults(run=_cmd_compact)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (errors print one line, status 2)."""
    args = _parser().parse_args(argv)
    stream = out if out is not None else sys.stdout
    try:
        return int(args.run(args, stream))
    except Exception as exc:  # a SowError, an OSError or anything else: one line, status 2
        return _fail(args.command, exc)


def _fail(command: str, exc: BaseException) -> int:
    """Print the one line of a failed command (at most MAX_MESSAGE characters of the
    message) on standard error; returns the exit status, 2."""
    text = str(exc)
    # One line: filter errors carry a caret diagram on the following lines.
    first = text[: MAX_MESSAGE + 1].splitlines()[0] if text else ""
    if len(first) > MAX_MESSAGE:
        first = f"{first[:MAX_MESSAGE]}... ({len(text)} characters)"
    print(f"sowlib {command}: {type(exc).__name__}: {first}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
