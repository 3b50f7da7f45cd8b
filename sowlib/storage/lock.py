"""The store's single-writer lock: an exclusive ``flock`` on ``<dir>/LOCK`` holding the owner pid.

Imports only ``sowlib.errors``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import weakref

from sowlib.errors import StoreLockedError, StorePathError
from sowlib.storage.fs import open_regular

__all__ = ["WriterLock", "lock_fd"]


def lock_fd(fd: int, path: str) -> None:
    """Take an exclusive non-blocking ``flock`` on ``fd``.

    ``flock`` locks belong to the open file description, so a second ``open`` of the same
    file in this process conflicts just as another process does.

    Raises:
        StoreLockedError: someone else holds the lock (``pid`` is unknown here).
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StoreLockedError(path, None) from None
        raise StorePathError(path, "lock", exc.strerror or str(exc), exc.errno) from exc


def _unlock(fd: int) -> None:
    """Drop the lock held through ``fd`` (closing the descriptor releases the ``flock``)."""
    with contextlib.suppress(OSError):
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class WriterLock:
    """Exclusive writer lock on a store directory; O(1) to take and release.

    The lock file ``<directory>/LOCK`` is never deleted (deleting it would let two processes
    lock two different inodes). The holder's pid is written in it for the error message.
    The kernel drops the lock when the holder dies, so a stale pid never blocks anyone; a
    lock that is garbage-collected without :meth:`release` is released then. A ``LOCK``
    that is a symlink is refused, never followed.

    Args:
        directory: the store directory (must exist unless ``create``).
        create: create the directory (and its parents) first.
    Raises:
        StoreLockedError: another process, or another ``WriterLock`` in this process, holds it;
            ``pid`` is the holder's pid when it could be read.
        StorePathError: the directory or the lock file cannot be created or opened (no
            permission, a file in the way, a symlink).

    Example:
        >>> lock = WriterLock(store_dir)  # doctest: +SKIP
        >>> lock.release()  # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike[str], *, create: bool = False) -> None:
        self.directory = os.fspath(directory)
        self.path = os.path.join(self.directory, "LOCK")
        step = "create the store directory"
        try:
            if create:
                os.makedirs(self.directory, exist_ok=True)
            step = "open the lock file"
            # A symlink, FIFO or device named LOCK is refused (StorePathError) unopened.
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, step)
        except StorePathError:
            raise
        except OSError as exc:
            where = self.directory if step.endswith("directory") else self.path
            reason = exc.strerror or str(exc)
            if exc.errno == errno.ELOOP:
                reason = "it is a symlink (refused: a lock file is never followed)"
            raise StorePathError(where, step, reason, exc.errno) from exc
        try:
            lock_fd(fd, self.directory)
        except StoreLockedError:
            pid = _read_pid(fd)
            os.close(fd)
            raise StoreLockedError(self.directory, pid) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self._finalizer = weakref.finalize(self, _unlock, fd)
        # The pid only improves another writer's error message; a full disk must not
        # keep the store from opening.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)

    @property
    def held(self) -> bool:
        """True until :meth:`release` is called."""
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock; idempotent. The pid is left in the file (harmless once unlocked)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            self._finalizer.detach()
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            _unlock(fd)

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
