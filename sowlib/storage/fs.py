"""The one seam through which the storage layer touches the file system: space, sync, rename.

Tests pass a subclass that fails (or kills the process) at a chosen step to prove that a crash
or a full disk at any point leaves a complete file. Also the safe way to create a file in a
store directory (never through a symlink) and the translation of OS errors into the
``SowError`` tree. Imports only ``sowlib.errors``.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
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
    "os_errors",
    "storage_error",
]

Progress = Callable[[int, int | None], None]
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

    def unlink(self, path: str) -> None:
        """Remove a file (``os.unlink``)."""
        os.unlink(path)

    def time(self) -> float:
        """Return the current time in seconds since the epoch (header creation stamps)."""
        return time.time()
