"""The journal's files: framed, checksummed entries in size-bounded segment files.

Imports only ``errors``. A segment is ``journal-<first seq>.log``: an 8-byte
magic, then entries ``length | crc32 | seq | time | kind | expiration | 5 fields``.
A short or bad entry at the very end of the newest segment is a torn write and
is cut off on open; a bad entry with more bytes after it is corruption.
"""

from __future__ import annotations

import math
import os
import re
import struct
import zlib
from collections.abc import Callable, Iterator

import attrs

from sowlib.errors import CorruptRecordError, FormatVersionError
from sowlib.storage.fs import open_regular

__all__ = ["KINDS", "Entry", "JournalLog"]

MAGIC = b"SOWJRN01"
KINDS = ("publish", "delete", "expire")
_HEAD = struct.Struct("<IIQdBd")  # length, crc, seq, time, kind, expiration (NaN: none)
_LEN = struct.Struct("<I")
_NAME = re.compile(r"journal-(\d{16})\.log")


@attrs.frozen
class Entry:
    """One journalled change: a publish (the stored or delivered message) or a removal."""

    seq: int
    timestamp: float
    kind: str
    topic: str
    message_type: str
    data: bytes
    sow_key: str = ""
    correlation_id: bytes = b""
    expiration: float | None = None


def _encode(entry: Entry) -> bytes:
    fields = (
        entry.topic.encode(),
        entry.message_type.encode(),
        entry.sow_key.encode(),
        entry.correlation_id,
        entry.data,
    )
    body = b"".join(_LEN.pack(len(f)) + f for f in fields)
    expiration = math.nan if entry.expiration is None else entry.expiration
    rest = _HEAD.pack(0, 0, entry.seq, entry.timestamp, KINDS.index(entry.kind), expiration)[8:]
    payload = rest + body
    return _LEN.pack(len(payload) + 8) + _LEN.pack(zlib.crc32(payload)) + payload


def _decode(buf: bytes, offset: int) -> tuple[Entry, int] | None:
    """The entry at ``offset`` and the next offset, or None if it is short or bad."""
    if offset + _HEAD.size > len(buf):
        return None
    length, crc, seq, stamp, kind, expiration = _HEAD.unpack_from(buf, offset)
    end = offset + length
    if length < _HEAD.size or end > len(buf) or zlib.crc32(buf[offset + 8 : end]) != crc:
        return None
    if kind >= len(KINDS):
        return None
    fields, pos = [], offset + _HEAD.size
    for _ in range(5):
        if pos + 4 > end:
            return None
        (size,) = _LEN.unpack_from(buf, pos)
        fields.append(bytes(buf[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    if pos != end:
        return None
    topic, mtype, key, corr, data = fields
    entry = Entry(
        seq,
        stamp,
        KINDS[kind],
        topic.decode(),
        mtype.decode(),
        data,
        key.decode(),
        corr,
        None if math.isnan(expiration) else expiration,
    )
    return entry, end


def _incomplete(buf: bytes, offset: int) -> bool:
    """Whether the bad entry at ``offset`` is the last thing in ``buf`` (a torn or
    in-progress write) rather than a damaged entry with more data after it."""
    if offset + _HEAD.size > len(buf):
        return True
    length: int = _LEN.unpack_from(buf, offset)[0]
    return offset + length >= len(buf)


class JournalLog:
    """Append-only segment files in one directory; O(1) append, sequential reads.

    Args:
        directory: where the segments live (created if missing).
        file_size: start a new segment once the current one reaches this many bytes.
        sync: fsync after every append (else the bytes are in the page cache when
            ``append`` returns, which survives the process being killed).
    Raises:
        CorruptRecordError: a bad entry that is not at the end of the newest segment.
        FormatVersionError: a segment that is not a sowlib journal file.
    """

    def __init__(self, directory: str, *, file_size: int = 64 << 20, sync: bool = False) -> None:
        self.directory = os.path.abspath(directory)
        self.file_size = file_size
        self.sync = sync
        os.makedirs(self.directory, exist_ok=True)
        self._segments: list[tuple[int, str]] = sorted(
            (int(m.group(1)), os.path.join(self.directory, name))
            for name in os.listdir(self.directory)
            if (m := _NAME.fullmatch(name))
        )
        self.last_seq = 0
        self.last_time = 0.0
        self._fd: int | None = None
        self._size = 0
        if self._segments:
            self._recover(self._segments[-1][1])
            for first, path in reversed(self._segments):
                last = self._newest(path, first)
                if last is not None:
                    self.last_seq, self.last_time = last.seq, last.timestamp
                    break

    def _recover(self, path: str) -> None:
        """Cut a torn tail off the newest segment."""
        with os.fdopen(open_regular(path, os.O_RDONLY, "read the journal segment"), "rb") as fh:
            buf = fh.read()
        self._check_magic(path, buf)
        offset = len(MAGIC)
        while offset < len(buf):
            got = _decode(buf, offset)
            if got is None:
                break
            offset = got[1]
        if offset < len(buf):
            if not _incomplete(buf, offset):
                raise CorruptRecordError(path, offset, "bad journal entry before the end")
            with os.fdopen(open_regular(path, os.O_RDWR, "repair the journal"), "r+b") as fh:
                fh.truncate(offset)
                os.fsync(fh.fileno())

    @staticmethod
    def _check_magic(path: str, buf: bytes) -> None:
        if buf[: len(MAGIC)] != MAGIC:
            raise FormatVersionError(path, buf[: len(MAGIC)], MAGIC)

    def _scan(self, path: str, first: int) -> Iterator[Entry]:
        with os.fdopen(open_regular(path, os.O_RDONLY, "read the journal segment"), "rb") as fh:
            buf = fh.read()
        self._check_magic(path, buf)
        offset = len(MAGIC)
        while offset < len(buf):
            got = _decode(buf, offset)
            if got is None:
                if _incomplete(buf, offset):
                    return  # an append still in progress when the file was read
                raise CorruptRecordError(path, offset, "bad journal entry")
            entry, offset = got
            yield entry

    def _newest(self, path: str, first: int) -> Entry | None:
        """The last entry of one segment (None when it holds none)."""
        newest = None
        for entry in self._scan(path, first):
            newest = entry
        return newest

    def _open_segment(self, first_seq: int) -> None:
        path = os.path.join(self.directory, f"journal-{first_seq:016d}.log")
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        fd = open_regular(path, flags, "open the journal segment")
        if os.fstat(fd).st_size == 0:
            os.write(fd, MAGIC)
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._size = fd, os.fstat(fd).st_size
        if not self._segments or self._segments[-1][1] != path:
            self._segments.append((first_seq, path))

    def append(self, entry: Entry) -> None:
        """Write ``entry`` (its seq must be ``last_seq + 1``)."""
        if self._fd is None:
            if self._segments and os.path.getsize(self._segments[-1][1]) < self.file_size:
                self._open_segment(self._segments[-1][0])
            else:
                self._open_segment(entry.seq)
        elif self._size >= self.file_size:
            self._open_segment(entry.seq)
        assert self._fd is not None
        frame = _encode(entry)
        os.write(self._fd, frame)
        self._size += len(frame)
        if self.sync:
            os.fsync(self._fd)
        self.last_seq, self.last_time = entry.seq, entry.timestamp

    def read(self, after: int = 0) -> Iterator[Entry]:
        """Every retained entry with a sequence number above ``after``, oldest first."""
        segments = list(self._segments)
        for i, (first, path) in enumerate(segments):
            nxt = segments[i + 1][0] if i + 1 < len(segments) else None
            if nxt is not None and nxt <= after + 1:
                continue  # every entry of this segment is at or before ``after``
            for entry in self._scan(path, first):
                if entry.seq > after:
                    yield entry

    @property
    def segment_count(self) -> int:
        """How many journal files exist."""
        return len(self._segments)

    def first_seq(self) -> int:
        """The sequence number of the oldest retained segment's first entry (0: empty)."""
        return self._segments[0][0] if self._segments else 0

    def trim(self, keep: Callable[[float], bool]) -> int:
        """Delete whole old segments whose newest entry fails ``keep(timestamp)``.

        The newest segment is always kept. Returns how many segments were removed.
        """
        removed = 0
        while len(self._segments) > 1:
            first, path = self._segments[0]
            newest = self._newest(path, first)
            if newest is not None and keep(newest.timestamp):
                break
            os.remove(path)
            self._segments.pop(0)
            removed += 1
        return removed

    def flush(self) -> None:
        """fsync the current segment."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the current segment; idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
