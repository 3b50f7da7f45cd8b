"""Writing a whole new log file beside the old one and swapping it in atomically.

Used by ``AppendLog.compact`` and by ``verify(repair=True)``. Protocol: write
``<log>.compact.tmp`` (locked, so no writer can open it), size it to whole pages (a new
log: one slab), fsync it, rename it over the log, fsync the directory. A crash before the
rename leaves the old file (the temp file is removed by the next writer open); after it,
the new one. Imports only ``sowlib.errors`` and sibling storage modules.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterable, Iterator

import attrs

from sowlib.storage.format import PREFIX, Buf, encode_header
from sowlib.storage.fs import FileSystem
from sowlib.storage.lock import lock_fd

__all__ = [
    "LEFTOVERS",
    "PAGE",
    "NewFile",
    "copy_kept",
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


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
        OSError: a write, truncate or fsync failed (the temp file is removed).
    """
    fd = os.open(tmp_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        lock_fd(fd, tmp_path)
        pending = bytearray(header)
        end, records, last = len(header), 0, 0
        for chunk in chunks:
            last, records = end, records + 1
            end += len(chunk)
            pending += chunk
            if len(pending) >= _CHUNK:
                write_all(fd, pending)
                pending.clear()
        write_all(fd, pending)
        size = max(unit, -(-end // unit) * unit)
        fs.truncate(fd, size)
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
        OSError: from the rename (``path`` unchanged, ``tmp_path`` removed) or from the
            directory fsync (``path`` already is the new file).
    """
    try:
        fs.rename(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        raise
    fs.fsync_dir(os.path.dirname(path))


def copy_kept(
    buf: Buf,
    offsets: Iterable[int],
    first_offset: int,
    mapping: dict[int, int],
) -> Iterator[bytes]:
    """Yield the raw bytes of the records at ``offsets``, filling ``mapping`` {old: new}.

    Records are copied verbatim, never decoded and re-framed: they hold no offsets and the
    checksum does not cover their position, so a record stays valid wherever it lands.
    Adjacent kept records are copied as one run. O(kept records + kept bytes).

    Args:
        buf: the mapped old log.
        offsets: record boundaries of the old log to keep, ascending.
        first_offset: where the first kept record goes in the new file (its header length).
        mapping: filled as records are kept (its size and last value give the record count
            and last offset of the new file).
    """
    new = first_offset
    unpack = PREFIX.unpack_from
    run_start = run_end = 0
    for off in offsets:
        length = unpack(buf, off)[0]
        mapping[off] = new
        new += length
        if off != run_end:
            if run_end > run_start:
                yield buf[run_start:run_end]
            run_start = off
        run_end = off + length
        if run_end - run_start >= _CHUNK:
            yield buf[run_start:run_end]
            run_start = run_end
    if run_end > run_start:
        yield buf[run_start:run_end]


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
    """Delete temp files a crash may have left beside ``path`` (writer open only)."""
    for suffix in LEFTOVERS:
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(path + suffix)
