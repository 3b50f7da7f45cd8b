"""Following a journal-format directory another process writes: new entries as they land.

A read-only process follows the writer's transaction log (and the store's pub/sub
bus, :mod:`sowlib.journal.bus`) with a :class:`LogTail`: it keeps the segment it
reads open, so a segment the writer trims meanwhile is still read to its seal; at
the seal it moves to the next segment. Only whole, checksummed frames are
returned; a frame still being written is read by a later poll. Imports ``errors``,
``storage.fs`` and the journal's ``frames``/``log``.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterable, Sequence

from sowlib.errors import CorruptRecordError
from sowlib.journal.frames import MAGIC, SEAL, Entry, Mark, decode, incomplete
from sowlib.journal.log import segment_version, segments_of
from sowlib.storage.fs import open_regular

__all__ = ["LogTail", "offer_each"]

logger = logging.getLogger(__name__)
#: Bytes read from the segment at a time.
CHUNK = 1 << 20
_LEN = struct.Struct("<I")
#: Entries :meth:`LogTail.at_end` reads at a time.
CHUNK_ENTRIES = 4096


class LogTail:
    """The entries of the journal in ``directory`` with a sequence number above ``after``,
    read as they are written; :meth:`poll` returns those that arrived.

    A directory that does not exist yet is empty until the writer creates it. A reader
    that fell so far behind that the writer trimmed segments it had not read yet goes
    on from the oldest retained segment (the lost entries are logged as a gap).
    Not thread-safe: its owner polls it under its own lock.

    Example:
        >>> import tempfile
        >>> from sowlib.journal import Journal
        >>> d = tempfile.mkdtemp()
        >>> j = Journal(d, ["chat"])
        >>> tail = LogTail(d)
        >>> _ = j.record("publish", "chat", "json", b"{}")
        >>> [e.seq for e in tail.poll()]
        [1]
        >>> tail.poll()
        []
        >>> j.close(); tail.close()
    """

    def __init__(self, directory: str, after: int = 0) -> None:
        self.directory = directory
        self.after = after
        self.gaps = 0
        self._first = -1  # the first seq (name) of the open segment
        self._fd: int | None = None
        self._path = ""
        self._offset = 0
        self._version = 2

    @property
    def fd(self) -> int | None:
        """The open segment's file descriptor (None between segments)."""
        return self._fd

    def _open(self, first: int, path: str) -> bool:
        try:
            fd = open_regular(path, os.O_RDONLY, "follow the journal")
        except FileNotFoundError:
            return False  # trimmed between the listing and the open
        head = os.pread(fd, len(MAGIC), 0)
        if len(head) < len(MAGIC):  # being created: read it again later
            os.close(fd)
            return False
        self._version = segment_version(path, head)
        self._fd, self._first, self._path, self._offset = fd, first, path, len(MAGIC)
        return True

    def _next_segment(self) -> bool:
        """Open the segment to read next: the one holding ``after + 1`` at first, then
        the one after the current; False when there is none yet."""
        try:
            segments = segments_of(self.directory)
        except FileNotFoundError:
            return False
        if self._first < 0:
            start = [s for s in segments if s[0] <= self.after + 1]
            candidates = [start[-1]] if start else segments[:1]
        else:
            candidates = [s for s in segments if s[0] > self._first][:1]
        for first, path in candidates:
            if first > self.after + 1 and self.after:
                self.gaps += 1
                logger.warning(
                    "journal %s: entries %d-%d were trimmed before this reader read them",
                    self.directory,
                    self.after + 1,
                    first - 1,
                )
            return self._open(first, path)
        return False

    @classmethod
    def at_end(cls, directory: str) -> LogTail:
        """A tail that starts after the newest entry written so far (it reads the
        newest segment once to find it)."""
        try:
            segments = segments_of(directory)
        except FileNotFoundError:
            return cls(directory)
        tail = cls(directory, segments[-1][0] - 1 if segments else 0)
        batch = tail.poll(CHUNK_ENTRIES)
        while batch:  # read to the end: only the position is wanted, not the entries
            batch = tail.poll(CHUNK_ENTRIES)
        return tail

    def poll(self, limit: int | None = None) -> list[Entry]:
        """The entries written since the last poll (at most about ``limit``), oldest first.

        Raises:
            CorruptRecordError: a damaged frame with more data after it.
            FormatVersionError: a file under a segment's name that is not one.
        """
        out: list[Entry] = []
        while (self._fd is not None or self._next_segment()) and len(out) < (limit or CHUNK):
            fd = self._fd
            assert fd is not None
            size = os.fstat(fd).st_size
            if size <= self._offset:
                return out
            buf = os.pread(fd, min(size - self._offset, CHUNK), self._offset)
            if len(buf) >= _LEN.size:
                (length,) = _LEN.unpack_from(buf, 0)
                if len(buf) < length <= size - self._offset:  # one frame longer than a chunk
                    buf = os.pread(fd, length, self._offset)
            pos, sealed = self._take(buf, out)
            self._offset += pos
            if sealed:
                self._close_segment()  # the writer rolled: go on with the next segment
            elif pos == 0 or (pos < len(buf) and len(buf) < CHUNK):
                return out  # a frame still being written
        return out

    def _take(self, buf: bytes, out: list[Entry]) -> tuple[int, bool]:
        """Decode the whole frames of ``buf`` into ``out``; how far they reach and
        whether the last was the segment's seal."""
        pos = 0
        while pos < len(buf):
            got = decode(buf, pos, self._version, self._offset)
            if got is None:
                if incomplete(buf, pos):
                    break
                raise CorruptRecordError(self._path, self._offset + pos, "bad journal entry")
            item, pos = got
            if isinstance(item, Mark):
                if item.kind == SEAL:
                    return pos, True
            elif item.seq > self.after:
                out.append(item)
                self.after = item.seq
        return pos, False

    def _close_segment(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Release the open segment; idempotent."""
        self._close_segment()


def offer_each(entries: Iterable[Entry], targets: Sequence[Callable[[Entry], object]]) -> None:
    """Hand every entry to every target, in order. An exception from one target (a
    handler's ``exit()`` included) stops nothing: the later entries and targets still
    get theirs, and the first exception is raised once all are offered."""
    stop: BaseException | None = None
    for entry in entries:
        for target in targets:
            try:
                target(entry)
            except BaseException as exc:  # a handler's exit(): the others still get theirs
                stop = stop or exc
    if stop is not None:
        raise stop
