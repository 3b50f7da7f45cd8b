"""What the topic reads from its log: header fields, checked payloads, record sizes.

Works over the persistent ``AppendLog`` and the transient ``MemoryLog`` alike (the
latter has no header-only reads: they are answered from the record). Payloads an open
has just verified are read in bulk from the file without a second checksum
(:meth:`LogView.trusted_payloads`). Imports only ``storage`` and ``index.types``.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from sowlib.index.types import Key
from sowlib.storage import AppendLog, Log, LogRecord, RecordKind
from sowlib.storage.format import (
    FLAG_U64_KEY,
    HEAD_U64,
    Buf,
)
from sowlib.storage.framing import framed_size
from sowlib.storage.native import NATIVE_PUT_PAYLOADS
from sowlib.storage.walk import put_payloads

__all__ = ["Header", "LogView"]

# The payloads of verified records: the C form where it was built, else the reference.
_put_payloads = NATIVE_PUT_PAYLOADS or put_payloads
_PUT = int(RecordKind.PUT)
_PUT_U64 = _PUT | FLAG_U64_KEY
# Bytes copied past the start of a batch's last record so that it is whole (a longer
# record sends its batch to the checked read).
_TAIL = 1 << 16
# Most bytes one batch of trusted_payloads reads (live records sparse among dead ones).
_SPAN = 8 << 20


class Header(NamedTuple):
    """The header fields of a key's live record."""

    offset: int
    seq: int
    timestamp: float
    expiration: float  # 0.0: never
    correlation_id: bytes
    size: int  # bytes the record occupies in the log


class LogView:
    """Reads of one topic's log; O(1) per header, O(record) per payload."""

    __slots__ = ("_memory", "file", "log")

    def __init__(self, log: Log) -> None:
        self.log = log
        #: The log as a file (its header, batch and byte reads), None in memory.
        self.file: AppendLog | None = log if isinstance(log, AppendLog) else None
        self._memory = self.file is None

    @property
    def persistent(self) -> bool:
        """True for a log file (header-only reads, batch framing); False in memory."""
        return not self._memory

    @property
    def from_checkpoint(self) -> bool:
        """True when the open restored state from a clean-close checkpoint."""
        report = getattr(self.log, "report", None)
        return bool(getattr(report, "from_checkpoint", False))

    def size_of(self, rec: LogRecord) -> int:
        """Bytes a record just appended or read occupies in a log file."""
        return framed_size(rec.key, len(rec.correlation_id), len(rec.payload), rec.expiration)

    def header_of(self, rec: LogRecord) -> Header:
        """The key map header of a record just appended or read."""
        return Header(
            rec.offset,
            rec.seq,
            rec.timestamp,
            rec.expiration,
            rec.correlation_id,
            self.size_of(rec),
        )

    def header(self, offset: int) -> Header:
        """The header fields of the record at ``offset`` (no checksum check); O(1)."""
        file = self.file
        if file is None:
            return self.header_of(self.log.read(offset))
        seq, stamp, expires, corr, size = file.read_entry(offset)
        return Header(offset, seq, stamp, expires, corr, size)

    def read(self, offset: int) -> LogRecord:
        """The record at ``offset``, its checksum verified; O(record)."""
        rec: LogRecord = self.log.read(offset)
        return rec

    def put_fields(self, offset: int) -> tuple[int, float, float, bytes, bytes]:
        """``(seq, timestamp, expiration, correlation_id, payload)`` of the PUT record at
        ``offset``, its checksum verified; O(record)."""
        file = self.file
        if file is None:
            rec = self.log.read(offset)
            return rec.seq, rec.timestamp, rec.expiration, rec.correlation_id, rec.payload
        seq, stamp, expires, corr, _size, payload = file.read_put(offset)
        return seq, stamp, expires, corr, payload

    def many_put_fields(self, offsets: list[int]) -> list[tuple[int, float, float, bytes, bytes]]:
        """:meth:`put_fields` of each offset, in order, in one batch."""
        file = self.file
        if file is None:
            return [self.put_fields(off) for off in offsets]
        return [(f[0], f[1], f[2], f[3], f[5]) for f in file.read_puts(offsets)]

    def payload(self, offset: int) -> bytes:
        """The payload at ``offset``, its checksum verified; O(record)."""
        payload: bytes = self.log.read(offset).payload
        return payload

    def records_matching(
        self, pattern: re.Pattern[bytes], start: int = 0, stop: int | None = None
    ) -> list[int] | None:
        """Offsets of the records whose bytes hold a match of ``pattern`` (dead ones
        too), ascending; None for a log in memory, which has no bytes to search."""
        return None if self.file is None else self.file.records_matching(pattern, start, stop)

    @property
    def span(self) -> tuple[int, int]:
        """``(first record offset, end of the written records)`` of a log file."""
        file = self.file
        return (0, 0) if file is None else (file.header_len, file.end_offset)

    def trusted_payloads(
        self, keys: Sequence[Key], offsets: list[int], batch: int
    ) -> Iterator[list[bytes]]:
        """The payloads of the live PUT records of ``keys`` at ``offsets`` (ascending), at
        most ``batch`` at a time, checksums not checked again.

        For records this open has just verified (its recovery walk checked every one):
        each batch is one copy of the mapped bytes and C-level slices. A batch whose bytes
        do not look like those records is read again with :meth:`payloads`, which checks
        everything. O(bytes spanned).
        """
        count = len(offsets)
        lo = 0
        while lo < count:
            hi = min(count, lo + batch)
            first = offsets[lo]
            if offsets[hi - 1] - first > _SPAN:
                hi = max(lo + 1, bisect_right(offsets, first + _SPAN, lo, hi))
            chunk = offsets[lo:hi]
            mapped = None if self.file is None else self.file.mapped  # an append may replace it
            got = None
            if mapped is not None:
                stop = min(offsets[hi] if hi < count else self.log.end_offset, chunk[-1] + _TAIL)
                got = _put_payloads(mapped, chunk, stop)
                if got is not None and not _ends_match(mapped, chunk, keys[lo:hi]):
                    got = None
            yield list(self.payloads(chunk)) if got is None else got
            lo = hi

    def verified_payloads(self, offsets: list[int], end: int) -> Sequence[bytes]:
        """The payloads of the PUT records at ``offsets`` (ascending, back to back up to
        ``end``) that a refresh verified just now: C-level slices of one copy of the
        mapped bytes, checksums not checked again; else :meth:`payloads`, which checks."""
        mapped = None if self.file is None else self.file.mapped
        if mapped is not None and offsets:
            got = _put_payloads(mapped, offsets, end)
            if got is not None:
                return got
        return self.payloads(offsets)

    def payloads(self, offsets: list[int]) -> Sequence[bytes]:
        """The payloads at ``offsets``, in order, checksums verified; O(their bytes)."""
        file = self.file
        if file is None:
            return [self.log.read(off).payload for off in offsets]
        return [f[5] for f in file.read_puts(offsets)]


def _ends_match(buf: Buf, offsets: list[int], keys: Sequence[Key]) -> bool:
    """Whether the first and last records at ``offsets`` are the ones expected there:
    a record stored under a u64 key holds the key the key map has for it."""
    for off, key in ((offsets[0], keys[0]), (offsets[-1], keys[-1])):
        try:
            head = HEAD_U64.unpack_from(buf, off)
        except struct.error:  # a header cut off by the end of the map: not the record
            return False
        if head[2] == _PUT_U64 and head[7] != key:
            return False
    return True
