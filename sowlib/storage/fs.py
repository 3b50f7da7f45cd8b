"""The one seam through which the storage layer touches the file system: space, sync, rename.

Tests pass a subclass that fails (or kills the process) at a chosen step to prove that a crash
or a full disk at any point leaves a complete file. Also the safe way to create a file in a
store directory (never through a symlink) and the translation of OS errors into the
``SowError`` tree. Imports only ``sowlib.errors``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator

import attrs

from sowlib.errors import SowError, StoreFullError, StorePathError

__all__ = [
    "FULL_ERRNOS",
    "PROGRESS_BYTES",
    "FileSystem",
    "Progress",
    "create_exclusive",
    "open_regular",
    "os_errors",
    "storage_error",
]

Progress = Callable[[int, int | None], object]
"""A ``progress(done, total)`` callback of a long operation (total None when unknown)."""
PROGRESS_BYTES = 1 << 22
"""Long storage walks report progress about once per this many bytes."""

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""OS errors that mean "no room for this write": raised as ``StoreFullError``."""
_ZEROS = bytes(1 << 16)


def storage_error(exc: OSError, path: str, operation: str, needed: int = 0) -> SowError:
    """Return the ``SowError`` for an OS error on a store path (full disk or a refused path)."""
    if exc.errno in FULL_ERRNOS:
        return StoreFullError(path, needed, exc.strerror or str(exc))
    return StorePathError(path, operation, exc.strerror or str(exc), exc.errno)


@contextlib.contextmanager
def os_errors(path: str, operation: str, needed: int = 0) -> Iterator[None]:
    """Raise an ``OSError`` of the block as :func:`storage_error`; a SowError passes through."""
    try:
        yield
    except SowError:
        raise
    except OSError as exc:
        raise storage_error(exc, exc.filename or path, operation, needed) from exc


def close_replaced(fd: int, mm: mmap.mmap | None = None) -> None:
    """Close ``fd``, the descriptor of a file a rename has just replaced, and ``mm``, its
    map, from a daemon thread; returns at once.

    [R] The descriptor may be the file's last link: closing it then frees the file's
    pages and blocks, a few milliseconds for a file of tens of megabytes and tens of
    milliseconds at hundreds, which neither a compaction's caller (a publish that set it
    off) nor a reader continuing on the new file should wait for; unmapping its map takes
    as long again (``mmap.close`` lets other threads run meanwhile). Nothing reads the
    file any more and nothing is lost if the process ends first (the kernel closes it
    then). Where no thread can be started, both are closed at once. A descriptor that
    cannot be closed is ignored (a close of a replaced file can fail only for one already
    closed), and so is a map still exported (it is unmapped when its last view goes).
    """

    def close() -> None:
        if mm is not None:
            with contextlib.suppress(BufferError):
                mm.close()
        with contextlib.suppress(OSError):
            os.close(fd)

    try:
        threading.Thread(target=close, name="sowlib-close-replaced", daemon=True).start()
    except RuntimeError:  # no thread can be started (interpreter exit, a thread limit)
        close()


def create_exclusive(path: str) -> int:
    """Create ``path`` afresh for writing and return its descriptor; never follows a symlink.

    A leftover file (or a planted symlink) of that name is removed first; the open itself
    uses ``O_CREAT | O_EXCL | O_NOFOLLOW``, so a symlink created in between makes it fail
    instead of writing through it.

    Raises:
        StorePathError: the file cannot be created (permissions, a directory in the way...).
        StoreFullError: no space for the new file.
    """
    with os_errors(path, "create"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(path, flags, 0o644)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str, flags: int, operation: str, mode: int = 0o644) -> int:
    """Open a store file and return its descriptor: only a regular file, never a symlink.

    Every file a store reads or writes in place (logs, checkpoints, the lock, journal
    segments and ids) is opened here. ``O_NOFOLLOW`` refuses a symlink; ``O_NONBLOCK``
    keeps a planted FIFO from blocking the open (it would otherwise wait forever for a
    writer), and ``fstat`` then refuses anything that is not a regular file before a
    byte is read. The descriptor is returned in blocking mode with ``O_CLOEXEC``.

    Args:
        path: the file.
        flags: ``os.O_RDONLY``, ``os.O_RDWR | os.O_CREAT``...; the safety flags are added.
        operation: what the caller was doing, for the error ("open the log").
        mode: permissions of a created file.
    Raises:
        FileNotFoundError: the file does not exist (and ``O_CREAT`` was not given); left
            as it is so each caller can say what a missing file means.
        StorePathError: a symlink, a FIFO, a device, a directory, or an OS refusal.
        StoreFullError: no room to create the file.
    """
    safe = flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, safe, mode)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            reason = "it is a symlink (refused: a store file is never followed)"
            raise StorePathError(path, operation, reason, exc.errno) from exc
        raise storage_error(exc, path, operation) from exc
    try:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            reason = f"it is {_kind(kind)} (refused: a store file must be a regular file)"
            raise StorePathError(path, operation, reason, errno.EINVAL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except OSError as exc:
        os.close(fd)
        if isinstance(exc, SowError):
            raise
        raise storage_error(exc, path, operation) from exc
    return fd


@attrs.define
class FileSystem:
    """Durability primitives used by :class:`~sowlib.storage.AppendLog`; override to inject faults.

    Every method is a thin wrapper over one system call so a test can fail exactly one step
    (a full disk is an ``OSError(ENOSPC)`` from :meth:`allocate` or :meth:`write`).

    Example:
        >>> class NoRename(FileSystem):
        ...     def rename(self, src: str, dst: str) -> None:
        ...         raise OSError("injected")
    """

    def fsync(self, fd: int) -> None:
        """Flush file data and metadata to stable storage (``os.fsync``)."""
        os.fsync(fd)

    def msync(self, mm: mmap.mmap, offset: int, size: int) -> None:
        """Write dirty mapped pages back (``msync(MS_SYNC)``); offset is page aligned."""
        mm.flush(offset, size)

    def rename(self, src: str, dst: str) -> None:
        """Atomically replace ``dst`` with ``src`` (``os.replace``; a symlink ``dst`` is
        replaced, never followed)."""
        os.replace(src, dst)

    def fsync_dir(self, directory: str) -> None:
        """Make renames and unlinks inside ``directory`` durable."""
        fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def truncate(self, fd: int, size: int) -> None:
        """Set the file size (``os.ftruncate``); used to undo a failed growth."""
        os.ftruncate(fd, size)

    def allocate(self, fd: int, offset: int, length: int) -> None:
        """Reserve disk blocks for ``[offset, offset + length)``, growing the file to cover it.

        A mapped file must never have holes: writing a page the file system cannot back
        kills the process with SIGBUS, while a failed reservation here is an ``OSError``
        (``ENOSPC``) the caller turns into ``StoreFullError``. Where ``posix_fallocate`` is
        not supported, zeros are written past the current end (existing bytes are never
        rewritten).
        """
        try:
            os.posix_fallocate(fd, offset, length)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            pos, stop = max(offset, os.fstat(fd).st_size), offset + length
            while pos < stop:
                pos += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), stop - pos)], pos)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        """Write some of ``data`` at the current position (``os.write``); returns the count."""
        return os.write(fd, data)

    def close_replaced(self, fd: int, mm: mmap.mmap | None = None) -> None:
        """Close the descriptor of a file a rename replaced, and its map, off the
        caller's thread (:func:`close_replaced`)."""
        close_replaced(fd, mm)

    def unlink(self, path: str) -> None:
        """Remove a file (``os.unlink``)."""
        os.unlink(path)

    def time(self) -> float:
        """Return the current time in seconds since the epoch (header creation stamps)."""
        return time.time()
