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
from itertools import repeat
from operator import add, sub
from typing import NamedTuple

from sowlib.index.types import Key
from sowlib.storage import AppendLog, Log, LogRecord, RecordKind
from sowlib.storage.format import (
    CHECKSUM_SIZE,
    FLAG_RESERVED,
    FLAG_U64_KEY,
    HEAD_U64,
    KIND_MASK,
    RECORD_MARKER,
)
from sowlib.storage.framing import framed_size

__all__ = ["Header", "LogView"]

# A record's length, marker, kind byte and payload length.
_HEAD = struct.Struct("<IBBxxI")
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
                got = _slice_payloads(mapped[first:stop], first, chunk, keys[lo:hi])
            yield list(self.payloads(chunk)) if got is None else got
            lo = hi

    def payloads(self, offsets: list[int]) -> Sequence[bytes]:
        """The payloads at ``offsets``, in order, checksums verified; O(their bytes)."""
        file = self.file
        if file is None:
            return [self.log.read(off).payload for off in offsets]
        return [f[5] for f in file.read_puts(offsets)]


def _slice_payloads(
    data: bytes, start: int, offsets: list[int], keys: Sequence[Key]
) -> list[bytes] | None:
    """The payloads of the PUT records at ``offsets`` in ``data`` (the file from
    ``start``), or None when a record does not look like the one expected there (the
    first and last records' u64 keys are compared with theirs too)."""
    rel = list(map(sub, offsets, repeat(start)))
    try:
        heads = list(map(_HEAD.unpack_from, repeat(data), rel))
        ends_of_batch = (HEAD_U64.unpack_from(data, rel[0]), HEAD_U64.unpack_from(data, rel[-1]))
    except struct.error:  # the last record is longer than the bytes read
        return None
    lengths, markers, kinds, sizes = zip(*heads, strict=True)
    if markers.count(RECORD_MARKER) != len(offsets) or rel[-1] + lengths[-1] > len(data):
        return None
    if any(kind & KIND_MASK != _PUT or kind & FLAG_RESERVED for kind in set(kinds)):
        return None
    for head, key in zip(ends_of_batch, (keys[0], keys[-1]), strict=True):
        if head[2] == _PUT_U64 and head[7] != key:
            return None
    # Whatever the record's layout, its payload ends where its checksum starts.
    ends = list(map(add, rel, map(add, lengths, repeat(-CHECKSUM_SIZE))))
    return list(map(data.__getitem__, map(slice, map(sub, ends, sizes), ends)))
