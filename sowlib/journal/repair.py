"""``sowlib verify [--repair]`` for a journal directory.

Imports ``errors``, ``storage.fs`` and the journal's ``frames``/``log``/``state``.
Verify walks every segment frame by frame and classifies each stop by the journal's
recovery rule (see :mod:`sowlib.journal.log`); repair salvages every intact entry of
a damaged segment into a new file (the original kept as ``<segment>.corrupt``) and
rewrites the state file. A repair that lost entries counts as a retention trim up to
the highest sequence number that may have been lost, so a later open never
"reconciles" a SOW back to a state the lost entries had replaced.
"""

from __future__ import annotations

import os
import shutil
import zlib

import attrs

from sowlib.errors import FormatVersionError, SowError
from sowlib.journal.frames import COMMIT, MAGIC, SEAL, Entry, Mark, decode, encode, encode_mark
from sowlib.journal.frames import incomplete as _at_end
from sowlib.journal.log import RESERVE, segment_version, segments_of
from sowlib.journal.state import JournalState, load_state, save_state
from sowlib.storage.fs import FileSystem, create_exclusive, os_errors

__all__ = ["JournalReport", "SegmentReport", "is_journal_dir", "is_journal_file", "verify_journal"]


@attrs.frozen
class SegmentReport:
    """One segment: its intact entries and every damaged stretch ``(offset, bytes)``."""

    path: str
    entries: tuple[Entry, ...]
    damaged: tuple[tuple[int, int], ...]
    torn_tail: int
    lost_seqs: tuple[tuple[int, int], ...]


@attrs.frozen
class JournalReport:
    """What :func:`verify_journal` found (and did)."""

    directory: str
    segments: tuple[SegmentReport, ...]
    state_problem: str
    repaired: bool
    backups: tuple[str, ...]

    @property
    def entries(self) -> int:
        return sum(len(s.entries) for s in self.segments)

    @property
    def last_seq(self) -> int:
        seqs = [s.entries[-1].seq for s in self.segments if s.entries]
        return max(seqs, default=0)

    @property
    def damaged(self) -> list[tuple[str, int, int]]:
        return [(s.path, at, size) for s in self.segments for at, size in s.damaged]

    @property
    def lost_seqs(self) -> list[tuple[int, int]]:
        return [lost for s in self.segments for lost in s.lost_seqs]

    @property
    def ok(self) -> bool:
        return not self.damaged and not self.state_problem


def is_journal_file(path: str) -> bool:
    """Whether ``path`` is named like a journal segment or state file."""
    name = os.path.basename(path)
    return name == "journal.state" or any(
        os.path.basename(p) == name for _, p in segments_of(os.path.dirname(path) or ".")
    )


def is_journal_dir(path: str) -> bool:
    """Whether ``path`` is a directory holding journal files."""
    return os.path.isdir(path) and (
        bool(segments_of(path)) or os.path.exists(os.path.join(path, "journal.state"))
    )


def _walk(
    path: str, first: int, buf: bytes, newest: bool, committed: int, next_first: int
) -> SegmentReport:
    offset, sealed, torn = len(MAGIC), False, 0
    entries: list[tuple[int, Entry]] = []
    damaged: list[tuple[int, int]] = []
    try:
        version = segment_version(path, buf)
    except FormatVersionError:  # a damaged magic: salvage what follows it
        version = 2
        damaged.append((0, min(len(buf), len(MAGIC))))
    while offset < len(buf):
        got = decode(buf, offset, version)
        if got is not None:
            item, end = got
            if isinstance(item, Entry):
                entries.append((offset, item))
            sealed = isinstance(item, Mark) and item.kind == SEAL
            offset = end
            continue
        if newest and offset >= committed and _at_end(buf, offset):
            torn = len(buf) - offset
            break
        start = offset
        offset += 1
        while offset < len(buf) and decode(buf, offset, version) is None:
            offset += 1
        damaged.append((start, offset - start))
        sealed = False
    if newest and len(buf) < committed:
        damaged.append((len(buf), committed - len(buf)))
    elif not (newest or version == 1 or sealed or (damaged and sum(damaged[-1]) == len(buf))):
        damaged.append((len(buf), 0))  # cut short: its seal is missing
    lost = []
    for at, _size in damaged:
        before = [e.seq for off, e in entries if off < at]
        after = [e.seq for off, e in entries if off > at]
        low = before[-1] + 1 if before else first
        high = after[0] - 1 if after else (next_first - 1 if next_first else 0)
        lost.append((low, high))
    found = tuple(e for _, e in entries)
    return SegmentReport(path, found, tuple(damaged), torn, tuple(lost))


def verify_journal(
    directory: str, *, repair: bool = False, fs: FileSystem | None = None
) -> JournalReport:
    """Check every journal file of ``directory``; with ``repair``, salvage what is intact.

    Lost sequence-number ranges whose end is unknown (a cut newest file) end at 0.
    """
    fs = fs if fs is not None else FileSystem()
    directory = os.path.abspath(directory)
    problem = ""
    try:
        state = load_state(directory)
        if state is None and segments_of(directory):
            problem = "journal.state is missing"
    except SowError as exc:
        state, problem = None, str(exc)
    ident_path = os.path.join(directory, "journal.id")
    try:
        with open(ident_path, "rb") as fh:
            text = fh.read(64).decode("ascii", "replace").strip()
        ident = int(text) if text.isascii() and text.isdigit() else 0
    except FileNotFoundError:
        ident = 0
    if state is not None and state.id and state.id != ident:
        problem = problem or "journal.id does not match journal.state"
    segments = segments_of(directory)
    reports = []
    for i, (first, path) in enumerate(segments):
        newest = i == len(segments) - 1
        committed = state.committed if state is not None and state.segment == first else 0
        with os_errors(path, "read"), open(path, "rb") as fh:
            buf = fh.read()
        nxt = segments[i + 1][0] if not newest else 0
        reports.append(_walk(path, first, buf, newest, committed, nxt))
    report = JournalReport(directory, tuple(reports), problem, False, ())
    if not repair or report.ok:
        return report
    return _repair(report, state, ident, fs)


def _repair(
    report: JournalReport, state: JournalState | None, ident: int, fs: FileSystem
) -> JournalReport:
    backups = []
    last = len(report.segments) - 1
    for i, seg in enumerate(report.segments):
        if not seg.damaged:
            continue
        backup = seg.path + ".corrupt"
        shutil.copyfile(seg.path, backup)
        backups.append(backup)
        tmp = seg.path + ".repair.tmp"
        fd = create_exclusive(tmp)
        try:
            data = bytearray(MAGIC)
            for entry in seg.entries:
                data += encode(entry)
            top = seg.entries[-1] if seg.entries else None
            kind = COMMIT if i == last else SEAL
            seq, stamp = (top.seq, top.timestamp) if top else (0, 0.0)
            data += encode_mark(kind, seq, stamp, len(data), zlib.crc32(data))
            with os_errors(tmp, "write", len(data)):
                view = memoryview(bytes(data))
                while view:
                    view = view[fs.write(fd, view) :]
                fs.fsync(fd)
        finally:
            os.close(fd)
        fs.rename(tmp, seg.path)
    fs.fsync_dir(report.directory)
    new = state if state is not None else JournalState()
    if new.id and new.id != ident:  # the state file's copy passed its checksum
        with open(os.path.join(report.directory, "journal.id"), "w", encoding="ascii") as fh:
            fh.write(f"{new.id}\n")
    new.id = new.id or ident
    high = max([report.last_seq, new.reserved, *(hi for _, hi in report.lost_seqs)])
    new.reserved = high + (2 * RESERVE if state is None else 0)
    if report.segments:
        first = segments_of(report.directory)[-1]
        new.segment, new.committed = first[0], os.path.getsize(first[1])
    if report.lost_seqs:  # nothing up to the last lost entry reconciles a SOW any more
        new.trimmed = max(hi if hi else new.reserved for _, hi in report.lost_seqs)
        new.owned, new.refilling = {}, []
    save_state(report.directory, new, fs, sync=True)
    return attrs.evolve(report, repaired=True, backups=tuple(backups))
