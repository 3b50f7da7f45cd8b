"""Scan-on-open recovery (torn write vs corruption) and ``verify`` / ``verify(repair=True)``.

One rule (docs/storage-format.md, "Recovery rule"): a bad record before the committed end
the header records is corruption; past it, a bad record is a torn write when nothing intact
follows it or when its first eight bytes are still zero (a write in flight writes them
last), and corruption otherwise. ``verify`` applies the same rule. Imports only
``sowlib.errors`` and sibling storage modules.
"""

from __future__ import annotations

import mmap
import os
import time

import attrs

from sowlib.errors import ConfigError, FormatVersionError
from sowlib.storage.checkpoint import read_checkpoint
from sowlib.storage.compaction import PAGE, install, write_all, write_log_file
from sowlib.storage.format import (
    FILE_HEADER,
    HEAD_BYTES,
    MAGIC,
    MARKER_BYTES,
    MAX_META,
    PREFIX,
    RECORD_HEADER,
    Buf,
    FileHeader,
    decode_header,
    decode_record,
    encode_header,
    record_problem,
)
from sowlib.storage.fs import (
    PROGRESS_BYTES,
    FileSystem,
    Progress,
    create_exclusive,
    open_regular,
    os_errors,
)
from sowlib.storage.lock import lock_fd
from sowlib.storage.walk import EntryList, verify_entries

__all__ = [
    "RecoveryReport",
    "ScanResult",
    "VerifyReport",
    "classify_tail",
    "check_records",
    "find_next_valid",
    "garbage_end",
    "read_header",
    "recover",
    "verify",
    "walk",
]

_MARKER_AT = 4  # byte of a record holding the marker (after the u32 length)


@attrs.frozen
class RecoveryReport:
    """What opening a log found.

    Attributes:
        records: intact records in the file.
        end_offset: where the next record goes.
        truncated_bytes: bytes of a torn tail the writer zeroed (0 if none; always 0 read-only).
        from_checkpoint: the prefix up to the checkpoint was trusted, only the tail scanned.
    """

    records: int
    end_offset: int
    truncated_bytes: int
    from_checkpoint: bool


@attrs.frozen
class ScanResult:
    """Outcome of :func:`recover` over one region.

    Attributes:
        end: offset after the last intact record of the unbroken run.
        records: intact records in the run.
        last_offset: offset of the last intact record (0 if the run is empty).
        next_valid: an intact record after a damaged stretch at ``end``, or None.
        garbage_end: end of the non-zero bytes after ``end`` (== end when the tail is clean).
        entries: what ``scan_entries`` yields for the run, built while verifying it.
        corrupt: the bytes at ``end`` are damage, not a torn write (see
            :func:`classify_tail`): opening must raise ``CorruptRecordError(file, end)``.
    """

    end: int
    records: int
    last_offset: int
    next_valid: int | None
    garbage_end: int
    entries: EntryList = attrs.field(factory=EntryList, eq=False, repr=False)
    corrupt: bool = False


@attrs.frozen
class VerifyReport:
    """Result of :func:`verify`.

    Attributes:
        path: the log file.
        ok: no corruption (a torn tail alone is the normal aftermath of a crash and is ok).
            Equal to "a writer open succeeds" unless a valid checkpoint hides damage before
            its end from the open (the damaged record then fails when it is read).
        generation: generation of the file examined.
        records: intact records found (all of them salvageable).
        last_seq: highest intact sequence number.
        end_offset: end of the last intact record.
        corrupt_offsets: start of every damaged stretch that has intact records after it.
        corrupt_bytes: total size of those stretches.
        torn_tail_bytes: size of the torn tail (0 if none).
        repaired: a new file with every intact record replaced the original.
        backup_path: the copy of the original kept by a repair, or None.
        committed_end: the end of the records the header records as complete; a bad record
            before it is corruption, never a torn tail.
        open_error_offset: where opening the log (as it is, checkpoint included) raises
            ``CorruptRecordError``, or None when it opens (cutting ``torn_tail_bytes``).
    """

    path: str
    ok: bool
    generation: int
    records: int
    last_seq: int
    end_offset: int
    corrupt_offsets: tuple[int, ...]
    corrupt_bytes: int
    torn_tail_bytes: int
    repaired: bool
    backup_path: str | None
    committed_end: int = 0
    open_error_offset: int | None = None


def walk(buf: Buf, start: int, limit: int) -> tuple[int, int, int]:
    """Follow intact records from ``start`` (checksums included); O(bytes).

    Returns:
        (offset after the last intact record, number of records, offset of the last one or 0).
    """
    end, last, entries = verify_entries(buf, start, limit)
    return end, len(entries), last


def garbage_end(buf: Buf, start: int, limit: int) -> int:
    """Return one past the last non-zero byte in ``[start, limit)``, or ``start``; O(bytes)."""
    return start + len(buf[start:limit].rstrip(b"\0"))


def find_next_valid(buf: Buf, start: int, limit: int) -> int | None:
    """Return the first offset after ``start`` holding an intact record, or None.

    Records are not aligned: every position whose byte 4 is the record marker is a
    candidate. ``find`` runs in C and ``record_problem`` rejects most false candidates
    before hashing, so scanning a zero tail or a damaged stretch costs little; O(bytes).
    """
    at = _MARKER_AT
    pos = start + 1 + at
    while True:
        found = buf.find(MARKER_BYTES, pos, limit)
        if found < 0:
            return None
        if record_problem(buf, found - at, limit) is None:
            return found - at
        pos = found + 1


def classify_tail(buf: Buf, end: int, limit: int, committed: int) -> tuple[int, int | None, bool]:
    """Classify the bytes at ``end``, where the walk of intact records stopped; O(bytes).

    The recovery rule: before ``committed`` (what a clean close, flush or compaction
    recorded as complete) a bad record is corruption whatever follows. Past it, a bad
    record with only zeros after it, or whose first eight bytes are still zero, is a torn
    write: every append writes a record's first eight bytes last (a batch: the first
    record's), so a write in flight always leaves them zero, and no single flipped bit
    turns a record's non-zero first bytes (the marker alone has six bits set) into zeros.
    Any other bad record with an intact record after it is corruption.

    Returns:
        ``(end of the non-zero bytes after end, first intact record after end or None,
        corrupt)``.
    """
    tail = garbage_end(buf, end, limit)
    if end < committed:
        return tail, find_next_valid(buf, end, limit), True
    if tail == end or not any(buf[end : min(end + HEAD_BYTES, limit)]):
        return tail, None, False
    nxt = find_next_valid(buf, end, limit)
    return tail, nxt, nxt is not None


def recover(buf: Buf, start: int, limit: int, committed: int = 0) -> ScanResult:
    """Scan ``[start, limit)`` and classify what follows the last intact record; O(bytes).

    Args:
        buf: the mapped log.
        start: a record boundary (first record, or a checkpoint's end offset).
        limit: file size.
        committed: the committed end (see :func:`classify_tail`).
    """
    end, last, entries = verify_entries(buf, start, limit)
    tail, nxt, corrupt = classify_tail(buf, end, limit, committed)
    return ScanResult(end, len(entries), last, nxt, tail, entries, corrupt)


def recover_live(
    buf: Buf, start: int, limit: int, committed: int = 0, attempts: int = 200
) -> ScanResult:
    """:func:`recover` for a read-only opener while a writer may be appending.

    A record the writer is copying in right now looks damaged, and by the time the
    scan looks past it the writer may have finished it and the next one: a hole
    followed by a valid record, which :func:`recover` calls corruption. Re-read
    from the same boundary until the run stops growing into a clean tail; only a
    hole that stays put across ``attempts`` re-reads (about 0.2 s) is corruption.
    """
    found = recover(buf, start, limit, committed)
    for _ in range(attempts):
        if not found.corrupt or found.end < committed:
            return found
        time.sleep(0.001)
        again = recover(buf, found.end, limit, committed)
        found.entries.extend(again.entries)
        found = ScanResult(
            again.end,
            found.records + again.records,
            again.last_offset or found.last_offset,
            again.next_valid,
            again.garbage_end,
            found.entries,
            again.corrupt,
        )
    return found


def check_records(buf: Buf, file: str, start: int, end: int) -> tuple[int, int]:
    """Verify every record in ``[start, end)`` fully, and that seqs strictly increase.

    Returns:
        (number of records, highest seq or 0).
    Raises:
        CorruptRecordError: a record fails its checks (its offset is given).
        AssertionError: seqs do not increase, or the last record overruns ``end``.
    """
    off, prev, count = start, 0, 0
    while off < end:
        seq = decode_record(buf, off, end, file).seq
        if seq <= prev:
            raise AssertionError(f"{file}: seq {seq} at byte {off} is not above {prev}")
        prev, count, off = seq, count + 1, off + PREFIX.unpack_from(buf, off)[0]
    return count, prev


def _seq_at(buf: Buf, offset: int) -> int:
    seq: int = RECORD_HEADER.unpack_from(buf, offset)[5]
    return seq


def verify(
    path: str | os.PathLike[str], repair: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Check every record of a log; with ``repair``, salvage every intact record.

    The damage is classified by the recovery rule an open applies (committed end, torn
    write, corruption); ``open_error_offset`` says where a writer open of the file as it
    is (its checkpoint included) raises, or None. A repair keeps a byte copy of the damaged
    file as ``<path>.corrupt``, writes the intact records (in order, unchanged) to a new
    file with the next generation, all committed, and renames it over the original.
    Nothing is repaired when the file has no corruption (a torn tail is cut by the next
    writer open). A damaged record is lost by a repair (a tombstone too: the report names
    every damaged stretch). O(file size).

    Args:
        path: the log file.
        repair: salvage into a new file when corruption is found.
        progress: called as ``progress(bytes_examined, file_size)`` while the records
            are checked (done never decreases; the last call has done == total).
    Returns:
        A VerifyReport.
    Raises:
        FormatVersionError: not a sowlib log or an unknown version.
        CorruptRecordError: the header itself is damaged (offset 0); nothing can be salvaged.
        StoreLockedError: ``repair`` while a writer has the log open (nothing is changed).
        StorePathError, StoreFullError: the file cannot be read, or the repair written.
        ConfigError: ``progress`` is not a callable.
    """
    if progress is not None and (isinstance(progress, bool) or not callable(progress)):
        raise ConfigError(
            "progress",
            f"{progress!r}: this layer takes a progress(done, total) callable;"
            " sowlib.verify also takes True or a tqdm bar",
        )
    file = os.fspath(path)
    with os_errors(file, "verify"):
        fd = open_regular(file, os.O_RDONLY, "verify")
    try:
        with os_errors(file, "verify"):
            size = os.fstat(fd).st_size
        if size == 0:
            raise FormatVersionError(file, b"", MAGIC)
        with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm:
            report, intact = _examine(mm, size, file, progress)
            if repair and not report.ok:
                backup = _repair(mm, file, intact, report)
                return attrs.evolve(report, repaired=True, backup_path=backup)
    finally:
        os.close(fd)
    return report


def read_header(path: str | os.PathLike[str]) -> FileHeader:
    """Read and verify only the header of a log (its ``meta``, generation...); O(len(meta)).

    Lets a caller learn a topic's configuration before choosing how to open the log
    (opening a writer consumes the checkpoint). Never modifies the file.

    Raises:
        FormatVersionError, CorruptRecordError: as for opening the log.
        StorePathError: the file cannot be read (or is a symlink).
    """
    file = os.fspath(path)
    with os_errors(file, "read the header of"):
        fd = open_regular(file, os.O_RDONLY, "read the header of")
        try:
            head = os.pread(fd, FILE_HEADER.size, 0)
            if len(head) == FILE_HEADER.size and head.startswith(MAGIC):
                more = max(0, FILE_HEADER.unpack_from(head)[3] - len(head))
                head += os.pread(fd, min(more, MAX_META + PAGE), len(head))
        finally:
            os.close(fd)
    return decode_header(head, len(head), file)


def _open_outcome(mm: mmap.mmap, size: int, file: str, header: FileHeader) -> int | None:
    """Where a writer open of the file as it is raises CorruptRecordError, or None."""
    ckpt = read_checkpoint(FileSystem(), file, mm, size, header, consume=False)
    start = ckpt.end_offset if ckpt else header.header_len
    committed = max(header.committed, start)
    found = recover(mm, start, size, committed)
    return found.end if found.corrupt else None


def _examine(
    mm: mmap.mmap, size: int, file: str, progress: Progress | None = None
) -> tuple[VerifyReport, list[tuple[int, int]]]:
    header = decode_header(mm, size, file)
    report_at = PROGRESS_BYTES
    committed = header.committed
    intact: list[tuple[int, int]] = []
    corrupt: list[int] = []
    corrupt_bytes = torn = 0
    off, last_seq, end = header.header_len, 0, header.header_len
    while off < size:
        if record_problem(mm, off, size) is None and _seq_at(mm, off) > last_seq:
            length = PREFIX.unpack_from(mm, off)[0]
            intact.append((off, length))
            last_seq = _seq_at(mm, off)
            off = end = off + length
            if progress is not None and off >= report_at:
                progress(off, size)
                report_at = off + PROGRESS_BYTES
            continue
        tail, nxt, bad = classify_tail(mm, off, size, committed)
        if not bad:
            torn = tail - off
            break
        corrupt.append(off)
        if nxt is None:
            corrupt_bytes += max(tail, min(committed, size)) - off
            break
        corrupt_bytes += nxt - off
        off = nxt
    if progress is not None:
        progress(size, size)
    report = VerifyReport(
        file,
        not corrupt,
        header.generation,
        len(intact),
        last_seq,
        end,
        tuple(corrupt),
        corrupt_bytes,
        torn,
        False,
        None,
        committed,
        _open_outcome(mm, size, file, header),
    )
    return report, intact


def _repair(mm: mmap.mmap, file: str, intact: list[tuple[int, int]], report: VerifyReport) -> str:
    fs = FileSystem()
    header = decode_header(mm, len(mm), file)
    with os_errors(file, "repair"):
        fd = open_regular(file, os.O_RDWR, "repair")
    try:
        lock_fd(fd, file)  # a live writer would keep appending to the old inode
        backup = file + ".corrupt"
        out = create_exclusive(backup)
        try:
            with os_errors(backup, "write the backup", len(mm)):
                write_all(out, memoryview(mm), fs)
                fs.fsync(out)
        finally:
            os.close(out)
        new_header = encode_header(
            header.generation + 1, fs.time(), max(header.base_seq, report.last_seq), header.meta
        )
        tmp = file + ".compact.tmp"
        chunks = (mm[o : o + n] for o, n in intact)
        new = write_log_file(fs, tmp, new_header, chunks, PAGE)
        try:
            install(fs, tmp, file)
        finally:
            os.close(new.fd)
    finally:
        os.close(fd)
    return backup
