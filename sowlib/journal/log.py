"""The journal's files: framed, checksummed entries in size-bounded segment files.

Imports ``errors``, ``storage.fs`` (the file-system seam) and the journal's
``frames``/``state``. A segment is ``journal-<first seq>.log`` (framing in
:mod:`sowlib.journal.frames`). The recovery rule is the SOW log's: flush, close and
a segment roll write a commit mark and record the committed end in ``journal.state``;
a bad entry before the committed end is corruption (``CorruptRecordError``), never
cut; only a short or bad entry past it, at the very end of the newest segment, is a
torn write and is cut on open. A rolled segment ends with a seal (its length and
crc32), so damage to an older segment is always reported. Sequence numbers are
reserved in the state file before they are written, so none is issued twice.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import re
import zlib
from collections.abc import Callable, Iterator

from sowlib.errors import CorruptRecordError, FormatVersionError
from sowlib.journal.frames import (
    COMMIT,
    KINDS,
    MAGIC,
    MAGIC_V1,
    MARK_SIZE,
    SEAL,
    Entry,
    Mark,
    decode,
    encode,
    encode_mark,
    incomplete,
)
from sowlib.journal.state import JournalState, load_state, save_state
from sowlib.storage.fs import FileSystem, open_regular, os_errors

__all__ = ["KINDS", "RESERVE", "Entry", "JournalLog", "segment_version", "segments_of"]

logger = logging.getLogger(__name__)
RESERVE = 1024
"""Sequence numbers reserved in the state file at a time."""
_NAME = re.compile(r"journal-(\d{16})\.log")


def segments_of(directory: str) -> list[tuple[int, str]]:
    """The segment files of a journal directory as ``(first seq, path)``, oldest first."""
    return sorted(
        (int(m.group(1)), os.path.join(directory, name))
        for name in os.listdir(directory)
        if (m := _NAME.fullmatch(name))
    )


def segment_version(path: str, buf: bytes) -> int:
    """The format version of a segment from its first bytes.

    Raises:
        FormatVersionError: not a sowlib journal file.
    """
    head = buf[: len(MAGIC)]
    if head == MAGIC:
        return 2
    if head == MAGIC_V1:
        return 1
    raise FormatVersionError(
        path, head, MAGIC, "not a sowlib journal file; move it out of the journal directory"
    )


@contextlib.contextmanager
def mapped_segment(path: str) -> Iterator[bytes | mmap.mmap]:
    """A segment's bytes, mapped rather than read: a huge or sparse file planted under
    a segment's name costs no memory, and its first bad frame ends the reading."""
    with os_errors(path, "read"):
        fd = open_regular(path, os.O_RDONLY, "read the journal file")
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size < mmap.PAGESIZE:
            yield fh.read()
            return
        with os_errors(path, "map"):
            view = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield view
        finally:
            view.close()


class JournalLog:
    """Append-only segment files in one directory; O(1) append, sequential reads.

    Args:
        directory: where the segments live (created if missing).
        file_size: start a new segment once the current one reaches this many bytes.
        sync: fsync after every append (else the bytes are in the page cache when
            ``append`` returns, which survives the process being killed).
        fs: the file-system seam (writes, fsync, rename); tests inject faults here.
    Raises:
        CorruptRecordError: a bad entry before the committed end, a sealed segment
            that is damaged or short, a damaged state file.
        FormatVersionError: a segment that is not a sowlib journal file.
    """

    def __init__(
        self,
        directory: str,
        *,
        file_size: int = 64 << 20,
        sync: bool = False,
        fs: FileSystem | None = None,
    ) -> None:
        self.directory = os.path.abspath(directory)
        self.file_size = file_size
        self.sync = sync
        self.fs = fs if fs is not None else FileSystem()
        os.makedirs(self.directory, exist_ok=True)
        self._segments = segments_of(self.directory)
        loaded = load_state(self.directory)
        self.state = loaded if loaded is not None else JournalState()
        self.last_seq = 0
        self.last_time = 0.0
        self.torn_bytes = 0
        self._fd: int | None = None
        self._size = 0
        self._crc = 0
        self._dirty = False
        self._writable = False  # the newest segment takes appends (format 2, not sealed)
        if self._segments:
            self._open_existing(loaded is None)
        self._issued = max(self.last_seq, self.state.reserved)

    # ------------------------------------------------------------------ open

    def _open_existing(self, no_state: bool) -> None:
        known = {first for first, _ in self._segments}
        if self.state.segment and self.state.segment not in known:
            path = os.path.join(self.directory, f"journal-{self.state.segment:016d}.log")
            raise CorruptRecordError(path, 0, "committed journal file is missing")
        for first, path in self._segments[:-1]:
            self._check_sealed(path, first)
        first, path = self._segments[-1]
        self._recover(path, first)
        if self.last_seq == 0:
            for _first, older in reversed(self._segments[:-1]):
                newest = self._newest(older)
                if newest:
                    self.last_seq, self.last_time = newest
                    break
        if no_state and any(self._version(p) == 2 for _, p in self._segments):
            logger.warning(
                "journal %s: no state file; sequence numbers resume %d past the last entry",
                self.directory,
                2 * RESERVE,
            )
            self.state.reserved = self.last_seq + 2 * RESERVE

    @staticmethod
    def _version(path: str) -> int:
        with os.fdopen(open_regular(path, os.O_RDONLY, "read the journal file"), "rb") as fh:
            return segment_version(path, fh.read(len(MAGIC)))

    def _check_sealed(self, path: str, first: int) -> None:
        """An older format-2 segment must end with its seal."""
        size = os.path.getsize(path)
        with os.fdopen(open_regular(path, os.O_RDONLY, "read the journal file"), "rb") as fh:
            head = fh.read(len(MAGIC))
            if segment_version(path, head) == 1:
                return
            if size < len(MAGIC) + MARK_SIZE:
                raise CorruptRecordError(path, size, "sealed journal file is short")
            fh.seek(size - MARK_SIZE)
            tail = fh.read(MARK_SIZE)
        got = decode(tail, 0, 2, size - MARK_SIZE)
        if got is None or not isinstance(got[0], Mark) or got[0].kind != SEAL:
            raise CorruptRecordError(path, size, "sealed journal file does not end with its seal")

    def _recover(self, path: str, first: int) -> None:
        """Check the newest segment against the committed end; cut a torn tail."""
        with mapped_segment(path) as buf:
            cut = self._check_newest(path, first, buf)
        if cut is not None:
            with os_errors(path, "truncate"), open(path, "r+b") as fh:
                self.fs.truncate(fh.fileno(), cut)
                self.fs.fsync(fh.fileno())

    def _check_newest(self, path: str, first: int, buf: bytes | mmap.mmap) -> int | None:
        """Read the newest segment; the offset to cut a torn tail at, if any."""
        if len(buf) < len(MAGIC) and MAGIC.startswith(bytes(buf)) and not self._committed(first):
            # created by a roll that was cut short: start it again
            with os_errors(path, "write"), open(path, "wb") as fh:
                fh.write(MAGIC)
            buf = MAGIC
        version = segment_version(path, bytes(buf[: len(MAGIC)]))
        offset, crc, sealed = len(MAGIC), zlib.crc32(buf[: len(MAGIC)]), False
        committed = self._committed(first)
        while offset < len(buf):
            got = decode(buf, offset, version)
            if got is None:
                break
            item, end = got
            if isinstance(item, Mark):
                if item.crc != crc:
                    raise CorruptRecordError(path, offset, "journal mark does not match the data")
                committed = max(committed, end)
                sealed = item.kind == SEAL
            if item.seq:
                self.last_seq, self.last_time = item.seq, item.timestamp
            crc = zlib.crc32(buf[offset:end], crc)
            offset = end
        if offset < len(buf) or offset < committed:
            if offset < committed:
                raise CorruptRecordError(path, offset, "bad journal entry before the committed end")
            if not incomplete(buf, offset):
                raise CorruptRecordError(path, offset, "bad journal entry before the end")
            if sealed:
                raise CorruptRecordError(path, offset, "data after a journal file's seal")
            self.torn_bytes = len(buf) - offset
            logger.warning(
                "journal %s: cut %d bytes of a write in flight at byte %d (past the committed"
                " end %d)",
                path,
                self.torn_bytes,
                offset,
                committed,
            )
            cut: int | None = offset
        else:
            cut = None
        self._size, self._crc = offset, crc
        self._writable = version == 2 and not sealed
        return cut

    def _committed(self, first: int) -> int:
        return self.state.committed if self.state.segment == first else 0

    def _newest(self, path: str) -> tuple[int, float] | None:
        """The seq and time of the last entry of one segment (None when it holds none)."""
        newest = None
        for entry in self._scan(path, False):
            newest = entry.seq, entry.timestamp
        return newest

    # ------------------------------------------------------------------ reading

    def _scan(self, path: str, newest: bool) -> Iterator[Entry]:
        with mapped_segment(path) as buf:
            version = segment_version(path, bytes(buf[: len(MAGIC)]))
            offset, crc, sealed = len(MAGIC), zlib.crc32(buf[: len(MAGIC)]), False
            while offset < len(buf):
                got = decode(buf, offset, version)
                if got is None:
                    if newest and incomplete(buf, offset):
                        return  # an append still in progress when the file was read
                    raise CorruptRecordError(path, offset, "bad journal entry")
                item, end = got
                if sealed:
                    raise CorruptRecordError(path, offset, "data after a journal file's seal")
                if isinstance(item, Mark):
                    if item.crc != crc:
                        raise CorruptRecordError(
                            path, offset, "journal mark does not match the data"
                        )
                    sealed = item.kind == SEAL
                else:
                    yield item
                crc = zlib.crc32(buf[offset:end], crc)
                offset = end
            if version == 2 and not newest and not sealed:
                raise CorruptRecordError(path, offset, "sealed journal file is short")

    def read(self, after: int = 0) -> Iterator[Entry]:
        """Every retained entry with a sequence number above ``after``, oldest first.

        Raises:
            CorruptRecordError: a damaged entry or seal.
        """
        segments = list(self._segments)
        for i, (_first, path) in enumerate(segments):
            nxt = segments[i + 1][0] if i + 1 < len(segments) else None
            if nxt is not None and nxt <= after + 1:
                continue  # every entry of this segment is at or before ``after``
            for entry in self._scan(path, nxt is None):
                if entry.seq > after:
                    yield entry

    # ------------------------------------------------------------------ writing

    @property
    def next_seq(self) -> int:
        """The sequence number the next entry gets (never one issued before)."""
        return self._issued + 1

    def save_state(self) -> None:
        """Write ``journal.state`` (fsynced when the log syncs)."""
        save_state(self.directory, self.state, self.fs, sync=self.sync)

    def _write(self, frame: bytes) -> None:
        """Append ``frame`` whole, or leave the file as it was and raise."""
        assert self._fd is not None
        path = self._segments[-1][1]
        start = self._size
        try:
            view = memoryview(frame)
            while view:
                view = view[self.fs.write(self._fd, view) :]
        except OSError:
            try:
                self.fs.truncate(self._fd, start)
            except OSError:
                logger.exception("journal %s: could not cut a failed write back", path)
            raise
        self._size += len(frame)
        self._crc = zlib.crc32(frame, self._crc)

    def _mark(self, kind: str) -> None:
        assert self._fd is not None
        path = self._segments[-1][1]
        frame = encode_mark(kind, self.last_seq, self.last_time, self._size, self._crc)
        with os_errors(path, "write", len(frame)):
            self._write(frame)
            self.fs.fsync(self._fd)
        self._dirty = False

    def _open_fd(self, path: str) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        with os_errors(path, "open"):
            return open_regular(path, flags, "open the journal segment")

    def _roll(self, first_seq: int) -> None:
        """Seal the current segment (if any) and start ``journal-<first_seq>.log``."""
        if self._fd is not None:
            self._mark(SEAL)
            os.close(self._fd)
            self._fd, self._writable = None, False
        path = os.path.join(self.directory, f"journal-{first_seq:016d}.log")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os_errors(path, "create", len(MAGIC)):
            fd = os.open(path, flags, 0o644)
            try:
                if self.fs.write(fd, MAGIC) != len(MAGIC):
                    raise OSError(errno.ENOSPC, "No space left on device")
            except BaseException:
                os.close(fd)
                os.unlink(path)
                raise
        self._segments.append((first_seq, path))
        self._fd, self._size, self._crc = fd, len(MAGIC), zlib.crc32(MAGIC)
        self._writable, self._dirty = True, False
        self.state.segment, self.state.committed = first_seq, len(MAGIC)
        self.save_state()

    def append(self, entry: Entry) -> None:
        """Write ``entry`` (its seq must be :attr:`next_seq`) whole, or nothing.

        Raises:
            StoreFullError: no room for it (nothing of it is left in the file).
            StorePathError: another operating-system error.
        """
        if entry.seq > self.state.reserved:
            before = self.state.reserved
            self.state.reserved = entry.seq + RESERVE
            try:
                self.save_state()
            except BaseException:
                self.state.reserved = before
                raise
        if self._fd is None and self._writable:  # (a full one is sealed by the roll)
            self._fd = self._open_fd(self._segments[-1][1])
        if self._fd is None or self._size >= self.file_size:
            self._roll(entry.seq)
        frame = encode(entry)
        with os_errors(self._segments[-1][1], "append", len(frame)):
            self._write(frame)
            if self.sync:
                assert self._fd is not None
                self.fs.fsync(self._fd)
        self._dirty = True
        self._issued = entry.seq
        self.last_seq, self.last_time = entry.seq, entry.timestamp

    def commit(self) -> None:
        """Write a commit mark, fsync, and record the committed end in the state file."""
        if self._fd is None or not self._dirty:
            return
        self._mark(COMMIT)
        self.state.segment, self.state.committed = self._segments[-1][0], self._size
        self.save_state()

    # ------------------------------------------------------------------ housekeeping

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
            _first, path = self._segments[0]
            newest = self._newest(path)
            if newest is not None and keep(newest[1]):
                break
            os.remove(path)
            self._segments.pop(0)
            self.state.trimmed = self._segments[0][0] - 1
            removed += 1
        if removed:
            self.save_state()
        return removed

    def flush(self) -> None:
        """Commit and fsync the current segment."""
        self.commit()

    def close(self) -> None:
        """Commit and close the current segment; idempotent.

        Raises:
            StoreFullError: the commit mark did not fit (the file is closed anyway; the
                entries since the last commit are a tail the next open keeps).
        """
        if self._fd is None:
            return
        try:
            self.commit()
            if self.state.reserved != self._issued:
                self.state.reserved = self._issued
                self.save_state()
        finally:
            os.close(self._fd)
            self._fd = None
