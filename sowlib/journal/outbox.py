"""Channels between a store's read-only processes and its writer: small files of journal frames.

A read-only process writes nothing into the store, yet an AMPS program in it
publishes to pub/sub topics and consumes queues, which only the writer's process
can carry out. So each read-only process that needs to *ask* the writer gets a
channel of its own under ``<store directory>/.outbox``: a series of files
``<name>.<n>.log`` that only it appends to (one process owns a channel, so no two
ever write the same file), in the journal's frame format
(:mod:`sowlib.journal.frames`: every frame checksummed). The writer's process reads
the channel with a :class:`ChannelReader`; answers go back the same way in a
channel the writer owns.

* A file begins with the journal magic; a full file ends with a seal, after which
  the owner goes on in ``<name>.<n+1>.log``. The reader deletes a file once it has
  read its seal, so a channel keeps about one file of :data:`FILE_SIZE` bytes.
* The owner holds an exclusive ``flock`` on the file it writes for as long as it
  lives; :meth:`ChannelReader.owner_alive` is whether it still does (the kernel
  drops the lock of a process that died).
* A damaged frame before the end of a file is a
  :class:`~sowlib.errors.CorruptRecordError`; a frame still being written is read by
  a later poll.

Imports ``errors``, ``storage.fs`` and the journal's ``frames``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import threading
import time
import zlib

from sowlib.errors import CorruptRecordError, FormatVersionError, StoreClosedError, StorePathError
from sowlib.journal.frames import MAGIC, SEAL, Entry, Mark, decode, encode, encode_mark, incomplete
from sowlib.storage.fs import open_regular

__all__ = [
    "FILE_SIZE",
    "OUTBOX_DIR",
    "ChannelReader",
    "ChannelWriter",
    "channel_names",
    "lock_held",
    "outbox_directory",
]

#: The channels' directory under the store directory.
OUTBOX_DIR = ".outbox"
#: A channel file is sealed and the next one started beyond this many bytes.
FILE_SIZE = 1 << 20
_FILE = re.compile(r"(.+)\.(\d{8})\.log")
_CHUNK = 1 << 20


def outbox_directory(store_path: str) -> str:
    """The channel directory of the store in ``store_path``."""
    return os.path.join(store_path, OUTBOX_DIR)


def _file(directory: str, name: str, number: int) -> str:
    return os.path.join(directory, f"{name}.{number:08d}.log")


def channel_names(directory: str) -> set[str]:
    """The names of the channels with a file in ``directory`` (none if it is missing)."""
    try:
        listing = os.listdir(directory)
    except FileNotFoundError:
        return set()
    return {m.group(1) for n in listing if (m := _FILE.fullmatch(n))}


def _numbers(directory: str, name: str) -> list[int]:
    try:
        listing = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(
        int(m.group(2)) for n in listing if (m := _FILE.fullmatch(n)) and m.group(1) == name
    )


def lock_held(path: str, *, exclusive: bool = False) -> bool:
    """Whether another open file description holds an ``flock`` on ``path`` (False:
    missing file). Probes with a shared lock (``exclusive``: an exclusive one), dropped
    at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)  # closing drops a lock the probe took
    return False


class ChannelWriter:
    """The owner's end of the channel ``name`` in ``directory`` (created if missing).

    Raises:
        StorePathError: the directory or file cannot be created (a read-only file system,
            no permission).
    """

    def __init__(self, directory: str, name: str, file_size: int = FILE_SIZE) -> None:
        self.directory = directory
        self.name = name
        self.file_size = file_size
        self._lock = threading.Lock()
        self._seq = 0
        self._fd = -1
        self._closed = False
        self._number = (_numbers(directory, name) or [-1])[-1] + 1
        self._start()

    def _start(self) -> None:
        """Open the next file, locked before it appears under its name (so its reader
        never finds it unlocked while its owner lives), and close the previous one."""
        path = _file(self.directory, self.name, self._number)
        temp = path + ".new"
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd = open_regular(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, "open")
        except OSError as exc:
            raise StorePathError(
                path, "open a channel file", exc.strerror or str(exc), exc.errno
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a new file nobody else locks: no wait
            os.write(fd, MAGIC)
            os.rename(temp, path)
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise StorePathError(
                path, "open a channel file", exc.strerror or str(exc), exc.errno
            ) from exc
        old, self._fd = self._fd, fd
        self._size, self._crc = len(MAGIC), zlib.crc32(MAGIC)
        if old >= 0:
            os.close(old)  # after the next file is locked: the owner is never seen gone

    def append(
        self,
        topic: str,
        message_type: str,
        data: bytes,
        *,
        op: str = "",
        correlation_id: bytes = b"",
        expiration: float | None = None,
    ) -> None:
        """Append one request (``op`` names it; the entry's ``sow_key`` carries it);
        the reader sees it once this returns. O(1).

        Raises:
            StoreClosedError: the channel is closed.
            StorePathError: the file cannot be written (a full disk); nothing of the
                request is readable then.
        """
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"channel {self.name}")
            self._seq += 1
            frame = encode(
                Entry(
                    self._seq,
                    time.time(),
                    "publish",
                    topic,
                    message_type,
                    bytes(data),
                    op,
                    correlation_id,
                    expiration,
                )
            )
            self._write(frame)
            if self._size >= self.file_size:
                self._roll()

    def _roll(self) -> None:
        """Seal the full file and go on in the next. The next file exists (locked)
        before the seal is written: a reader that reads the seal finds it, and the
        owner is never seen without a locked file."""
        full, size, crc = self._fd, self._size, self._crc
        self._fd = -1  # _start must not close the full file yet
        self._number += 1
        try:
            self._start()
        except StorePathError:  # no room for a new file: go on in this one, roll later
            self._fd, self._size, self._crc, self._number = full, size, crc, self._number - 1
            return
        seal = encode_mark(SEAL, self._seq, time.time(), size, crc)
        try:
            os.write(full, seal)
        finally:
            os.close(full)

    def _write(self, frame: bytes) -> None:
        try:
            done = os.write(self._fd, frame)
        except OSError as exc:
            done = 0
            error: OSError | None = exc
        else:
            error = None if done == len(frame) else OSError(errno.ENOSPC, "short write")
        if error is not None:
            with contextlib.suppress(OSError):  # cut a torn frame: the next one stays readable
                os.ftruncate(self._fd, self._size)
            path = _file(self.directory, self.name, self._number)
            raise StorePathError(
                path, "write a channel file", error.strerror or str(error), error.errno
            )
        self._size += done
        self._crc = zlib.crc32(frame, self._crc)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the file (its reader then sees the owner gone); idempotent."""
        with self._lock:
            self._closed = True
            fd, self._fd = self._fd, -1
            if fd >= 0:
                os.close(fd)


class ChannelReader:
    """The reading end of the channel ``name`` in ``directory``: :meth:`poll` returns
    the requests appended since the last poll, in order. Not thread-safe (its owner
    polls it under its own lock). It deletes each file it has read to the seal, and
    with :meth:`remove` the rest."""

    def __init__(self, directory: str, name: str) -> None:
        self.directory = directory
        self.name = name
        numbers = _numbers(directory, name)
        self._number = numbers[0] if numbers else 0
        self._fd = -1
        self._offset = 0

    @property
    def path(self) -> str:
        """The file being read (or to be read next)."""
        return _file(self.directory, self.name, self._number)

    def _open(self) -> bool:
        try:
            fd = open_regular(self.path, os.O_RDONLY, "read a channel file")
        except FileNotFoundError:
            return False
        head = os.pread(fd, len(MAGIC), 0)
        if len(head) < len(MAGIC):
            os.close(fd)
            return False  # being created: read it later
        if head != MAGIC:
            os.close(fd)
            raise FormatVersionError(self.path, head, MAGIC, "not a sowlib channel file")
        self._fd, self._offset = fd, len(MAGIC)
        return True

    def poll(self) -> list[Entry]:
        """The requests written since the last poll, oldest first.

        Raises:
            CorruptRecordError: a damaged frame with more data after it (the channel
                cannot be read on; nothing after it is guessed at).
            FormatVersionError: a file under a channel file's name that is not one.
        """
        out: list[Entry] = []
        while self._fd >= 0 or self._open():
            size = os.fstat(self._fd).st_size
            if size <= self._offset:
                return out
            buf = os.pread(self._fd, min(size - self._offset, _CHUNK), self._offset)
            pos, sealed = self._take(buf, out)
            self._offset += pos
            if sealed:
                os.close(self._fd)
                self._fd = -1
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                self._number += 1
            elif pos < len(buf) or len(buf) < _CHUNK:
                return out
        return out

    def _take(self, buf: bytes, out: list[Entry]) -> tuple[int, bool]:
        pos = 0
        while pos < len(buf):
            got = decode(buf, pos, 2, self._offset)
            if got is None:
                if incomplete(buf, pos):
                    break
                raise CorruptRecordError(self.path, self._offset + pos, "bad channel frame")
            item, pos = got
            if isinstance(item, Mark):
                if item.kind == SEAL:
                    return pos, True
            else:
                out.append(item)
        return pos, False

    def owner_alive(self) -> bool:
        """Whether the channel's owner still holds its file (False: it closed it or
        died). Call :meth:`poll` once more after False: its last requests are there."""
        if lock_held(self.path, exclusive=True):
            return True
        # between two files the owner locks the next before it lets the previous go
        return any(
            lock_held(_file(self.directory, self.name, n), exclusive=True)
            for n in _numbers(self.directory, self.name)
        )

    def remove(self) -> None:
        """Release the file and delete every file of the channel (its owner is gone)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        for number in _numbers(self.directory, self.name):
            with contextlib.suppress(OSError):
                os.unlink(_file(self.directory, self.name, number))

    def close(self) -> None:
        """Release the file; idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
