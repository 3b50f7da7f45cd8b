"""The one seam through which the storage layer touches durability: fsync, msync, rename, clock.

Tests pass a subclass that fails (or kills the process) at a chosen step to prove that a crash
at any point leaves a complete file. Imports nothing from sowlib.
"""

from __future__ import annotations

import mmap
import os
import time

import attrs

__all__ = ["FileSystem"]


@attrs.define
class FileSystem:
    """Durability primitives used by :class:`~sowlib.storage.AppendLog`; override to inject faults.

    Every method is a thin wrapper over one system call so a test can fail exactly one step.

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
        """Atomically replace ``dst`` with ``src`` (``os.replace``)."""
        os.replace(src, dst)

    def fsync_dir(self, directory: str) -> None:
        """Make renames and unlinks inside ``directory`` durable."""
        fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def truncate(self, fd: int, size: int) -> None:
        """Set the file size (``os.ftruncate``); used to grow a log by whole slabs."""
        os.ftruncate(fd, size)

    def unlink(self, path: str) -> None:
        """Remove a file (``os.unlink``)."""
        os.unlink(path)

    def time(self) -> float:
        """Return the current time in seconds since the epoch (header creation stamps)."""
        return time.time()
