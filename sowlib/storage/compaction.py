"""Writing a whole new log file beside the old one and swapping it in atomically.

Used by ``AppendLog.compact`` and by ``verify(repair=True)``. Protocol: write
``<log>.compact.tmp`` (created afresh, never through a symlink, and locked, so no writer can
open it), reserve its blocks to whole pages (a new log: one slab), fsync it, rename it over
the log, fsync the directory. A crash before the rename leaves the old file (the temp file
is removed by the next writer open); after it, the new one. A full disk is a
``StoreFullError`` and leaves the old file. Imports only ``sowlib.errors`` and sibling
storage modules (``storage.native`` for the C form of the kept records' check).
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
from collections.abc import Iterable, Iterator

import attrs
import xxhash

from sowlib.errors import CorruptRecordError
from sowlib.storage.format import (
    PREFIX,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    Buf,
    commit_slot_offset,
    decode_header,
    encode_commit,
    encode_header,
)
from sowlib.storage.fs import FileSystem, Progress, create_exclusive, os_errors
from sowlib.storage.lock import lock_fd
from sowlib.storage.native import NATIVE_KEPT_CHUNKS, NativeKeptChunks

__all__ = [
    "counted",
    "LEFTOVERS",
    "PAGE",
    "Kept",
    "NewFile",
    "copy_kept",
    "kept_chunks",
    "kept_runs",
    "create_log",
    "install",
    "remove_leftovers",
    "write_all",
    "write_log_file",
]

_CHUNK = 1 << 20
PAGE = mmap.ALLOCATIONGRANULARITY
"""A compacted or repaired file is sized to a whole number of these."""
LEFTOVERS = (".compact.tmp", ".ckpt.tmp", ".create.tmp")
"""Suffixes of temp files a crash can leave beside a log; a writer open removes them."""


@attrs.frozen
class NewFile:
    """A fully written, fsynced temp log (still open and locked through ``fd``).

    Attributes:
        fd: open read-write descriptor holding the writer ``flock``.
        end: offset after the last record (where the next append goes).
        size: file size (a whole number of ``unit``, see :func:`write_log_file`).
        records: number of records written.
        last_offset: offset of the last record (0 if none).
    """

    fd: int
    end: int
    size: int
    records: int
    last_offset: int


def write_all(fd: int, data: bytes | bytearray | memoryview, fs: FileSystem | None = None) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    write = os.write if fs is None else fs.write
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


def write_log_file(
    fs: FileSystem,
    tmp_path: str,
    header: bytes,
    chunks: Iterable[bytes | memoryview],
    unit: int,
) -> NewFile:
    """Create ``tmp_path`` holding ``header`` then every record chunk, and fsync it; O(bytes).

    Args:
        fs: where fsync and truncate go.
        tmp_path: the temp file to (re)create.
        header: encoded file header.
        chunks: encoded records, in file order (``records`` / ``last_offset`` of the result
            count one record per chunk; a caller passing runs of records corrects them).
        unit: the file is sized to a whole number of ``unit`` bytes (at least one): a slab
            for a new log, a page for a compacted or repaired one (growth adds slabs).
    Returns:
        The open, locked file and its layout.
    Raises:
        StoreFullError: no room for the file (the temp file is removed).
        StorePathError: a write, reservation or fsync failed (the temp file is removed).
        CorruptRecordError: from ``chunks`` (a damaged record to copy).
    """
    fd = create_exclusive(tmp_path)
    end = len(header)
    try:
        lock_fd(fd, tmp_path)
        with os_errors(tmp_path, "write", end):
            pending = bytearray(header)
            records, last = 0, 0
            for chunk in chunks:
                last, records = end, records + 1
                end += len(chunk)
                if len(chunk) >= _CHUNK:  # (a compaction's gathered runs) written as it is
                    write_all(fd, pending, fs)
                    pending.clear()
                    write_all(fd, chunk, fs)
                    continue
                pending += chunk
                if len(pending) >= _CHUNK:
                    write_all(fd, pending, fs)
                    pending.clear()
            write_all(fd, pending, fs)
            # Every record of the new file is complete: commit them all, so a damaged
            # record anywhere in it is corruption, never a torn tail to cut.
            commit_at = decode_header(header, len(header), tmp_path).commit_at
            os.pwrite(fd, encode_commit(1, end), commit_slot_offset(commit_at, 1))
            size = max(unit, -(-end // unit) * unit)
            fs.allocate(fd, 0, size)
            fs.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        raise
    return NewFile(fd, end, size, records, last)


def install(fs: FileSystem, tmp_path: str, path: str) -> None:
    """Rename ``tmp_path`` over ``path`` and make the rename durable; O(1).

    Raises:
        StorePathError: from the rename (``path`` unchanged, ``tmp_path`` removed) or from
            the directory fsync (``path`` already is the new file).
    """
    try:
        with os_errors(path, "rename a new file over"):
            fs.rename(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        raise
    with os_errors(os.path.dirname(path), "fsync the directory"):
        fs.fsync_dir(os.path.dirname(path))


def counted(offsets: Iterable[int], total: int, progress: Progress) -> Iterator[int]:
    """Yield ``offsets`` unchanged; ``progress(done, total)`` every 10,000 and at the end."""
    done = 0
    for done, off in enumerate(offsets, 1):
        yield off
        if done % 10_000 == 0:
            progress(done, total)
    progress(done, total)


def kept_runs(
    buf: Buf, offsets: list[int], first: int, limit: int, chunk: int
) -> tuple[list[int], list[tuple[int, int]], int]:
    """Check the records at ``offsets`` (ascending) and say where each goes; O(kept bytes).

    A record is kept when it lies within ``limit`` with its marker and a length of at
    least a record's overhead, and its checksum holds. The walk stops at the first record
    that fails.

    Args:
        buf: the mapped old log.
        offsets: record boundaries to keep, ascending.
        first: where the first of them goes in the new file.
        limit: end of the written records.
        chunk: a run of adjacent records is cut once it reaches this many bytes.
    Returns:
        ``(new offsets, runs, bad)``: the new offset of each record checked good (in
        order), the ``(start, end)`` byte runs of the old log to copy for them (adjacent
        records as one run), and the index in ``offsets`` of the first damaged record, or
        -1 when every one is good. The reference of the C form in
        ``sowlib.storage.recordread`` (``tests/storage/test_kept_runs.py``).
    """
    news: list[int] = []
    runs: list[tuple[int, int]] = []
    unpack, digest = PREFIX.unpack_from, xxhash.xxh3_64_digest
    new = first
    run_start = run_end = 0
    bad = -1
    for i, off in enumerate(offsets):
        if off < 0 or off + PREFIX.size > limit:
            bad = i
            break
        length, marker = unpack(buf, off)
        stop = off + length
        if (
            marker != RECORD_MARKER
            or length < RECORD_OVERHEAD
            or stop > limit
            or digest(buf[off : stop - 8]) != buf[stop - 8 : stop]
        ):
            bad = i
            break
        news.append(new)
        new += length
        if off != run_end:
            if run_end > run_start:
                runs.append((run_start, run_end))
            run_start = off
        run_end = stop
        if run_end - run_start >= chunk:
            runs.append((run_start, run_end))
            run_start = run_end
    if run_end > run_start:
        runs.append((run_start, run_end))
    return news, runs, bad


def kept_chunks(
    buf: Buf, offsets: list[int], first: int, limit: int, chunk: int
) -> tuple[list[int], list[bytes], int]:
    """:func:`kept_runs`, with the runs' bytes gathered: ``(new offsets, chunks, bad)``,
    each chunk the runs that come in order until they hold at least ``chunk`` bytes (the
    last one what is left), their bytes copied out of ``buf`` back to back. The reference
    of the C form in ``sowlib.storage.recordread`` (``tests/storage/test_kept_runs.py``),
    which gathers the bytes with one copy and makes no object per run."""
    news, runs, bad = kept_runs(buf, offsets, first, limit, chunk)
    chunks: list[bytes] = []
    first_run, size = 0, 0
    for at, (start, end) in enumerate(runs, 1):
        size += end - start
        if size >= chunk or at == len(runs):
            chunks.append(
                b"".join(map(buf.__getitem__, itertools.starmap(slice, runs[first_run:at])))
            )
            first_run, size = at, 0
    return news, chunks, bad


# Offsets checked per call of kept_chunks: progress is reported and chunks written between.
_STEP = 1 << 16


Kept = dict[int, int] | list[int]
"""What :func:`copy_kept` fills: ``{old offset: new offset}``, or the new offsets in order."""


def copy_kept(
    buf: Buf,
    offsets: Iterable[int],
    first_offset: int,
    mapping: Kept,
    limit: int,
    file: str = "",
    native: NativeKeptChunks | None = NATIVE_KEPT_CHUNKS,
) -> Iterator[bytes]:
    """Yield the raw bytes of the records at ``offsets``, filling ``mapping`` {old: new}.

    Records are copied verbatim, never decoded and re-framed: they hold no offsets and the
    checksum does not cover their position, so a record stays valid wherever it lands.
    Adjacent kept records are copied as one run, and the runs (kept records are often
    scattered: many short runs) in chunks of about ``_CHUNK`` bytes. Every kept record is
    checked (marker, length, checksum: :func:`kept_chunks`, or its C form ``native``)
    before it is copied, so a compaction never carries a damaged record into a file whose
    records all count as committed. O(kept records + kept bytes).

    Args:
        buf: the mapped old log.
        offsets: record boundaries of the old log to keep, ascending.
        first_offset: where the first kept record goes in the new file (its header length).
        mapping: filled as records are kept (its size and last value give the record count
            and last offset of the new file): ``{old: new}``, or a list of the new offsets,
            in the order of ``offsets``.
        limit: end of the written records.
        file: the old log's path, for the error.
        native: the C form of :func:`kept_chunks` (None: the reference).
    Raises:
        CorruptRecordError: a kept record is damaged (nothing has been installed).
    """
    check = kept_chunks if native is None else native
    new = first_offset
    pending = iter(offsets)
    while step := list(itertools.islice(pending, _STEP)):
        news, chunks, bad = check(buf, step, new, limit, _CHUNK)
        if isinstance(mapping, list):
            mapping.extend(news)  # news stops at a damaged record
        else:
            mapping.update(zip(step, news, strict=False))
        yield from chunks
        if bad >= 0:
            raise CorruptRecordError(
                file, step[bad], "damaged record (run `sowlib verify --repair`)"
            )
        if news:
            new = news[-1] + PREFIX.unpack_from(buf, step[len(news) - 1])[0]


def create_log(fs: FileSystem, path: str, meta: bytes, slab_size: int) -> None:
    """Create an empty log at ``path`` (one slab, header only) the crash-safe way.

    The file appears under its name complete or not at all (temp file, fsync, rename).
    """
    header = encode_header(0, fs.time(), 0, meta)
    tmp = path + ".create.tmp"
    new = write_log_file(fs, tmp, header, (), slab_size)
    try:
        install(fs, tmp, path)
    finally:
        os.close(new.fd)


def remove_leftovers(fs: FileSystem, path: str) -> None:
    """Delete temp files a crash may have left beside ``path`` (writer open only).

    A planted symlink of such a name is removed itself; its target is never touched.
    """
    for suffix in LEFTOVERS:
        with os_errors(path + suffix, "remove"), contextlib.suppress(FileNotFoundError):
            fs.unlink(path + suffix)
