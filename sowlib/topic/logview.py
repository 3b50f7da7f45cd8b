"""What the topic reads from its log: header fields, checked payloads, record sizes.

Works over the persistent ``AppendLog`` and the transient ``MemoryLog`` alike (the
latter has no header-only reads: they are answered from the record). Imports only
``storage``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from sowlib.storage import LogRecord
from sowlib.storage.framing import framed_size

__all__ = ["Header", "LogView"]


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

    __slots__ = ("_memory", "log")

    def __init__(self, log: Any) -> None:
        self.log = log
        self._memory = not hasattr(log, "read_entry")

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
        if self._memory:
            return self.header_of(self.log.read(offset))
        seq, stamp, expires, corr, size = self.log.read_entry(offset)
        return Header(offset, seq, stamp, expires, corr, size)

    def read(self, offset: int) -> LogRecord:
        """The record at ``offset``, its checksum verified; O(record)."""
        rec: LogRecord = self.log.read(offset)
        return rec

    def put_fields(self, offset: int) -> tuple[int, float, float, bytes, bytes]:
        """``(seq, timestamp, expiration, correlation_id, payload)`` of the PUT record at
        ``offset``, its checksum verified; O(record)."""
        if self._memory:
            rec = self.log.read(offset)
            return rec.seq, rec.timestamp, rec.expiration, rec.correlation_id, rec.payload
        seq, stamp, expires, corr, _size, payload = self.log.read_puts([offset])[0]
        return seq, stamp, expires, corr, payload

    def many_put_fields(self, offsets: list[int]) -> list[tuple[int, float, float, bytes, bytes]]:
        """:meth:`put_fields` of each offset, in order, in one batch."""
        if self._memory:
            return [self.put_fields(off) for off in offsets]
        return [(f[0], f[1], f[2], f[3], f[5]) for f in self.log.read_puts(offsets)]

    def payload(self, offset: int) -> bytes:
        """The payload at ``offset``, its checksum verified; O(record)."""
        payload: bytes = self.log.read(offset).payload
        return payload

    def records_matching(
        self, pattern: re.Pattern[bytes], start: int = 0, stop: int | None = None
    ) -> list[int] | None:
        """Offsets of the records whose bytes hold a match of ``pattern`` (dead ones
        too), ascending; None for a log in memory, which has no bytes to search."""
        if self._memory:
            return None
        found: list[int] = self.log.records_matching(pattern, start, stop)
        return found

    @property
    def span(self) -> tuple[int, int]:
        """``(first record offset, end of the written records)`` of a log file."""
        if self._memory:
            return 0, 0
        return int(self.log.header_len), int(self.log.end_offset)

    def payloads(self, offsets: list[int]) -> Sequence[bytes]:
        """The payloads at ``offsets``, in order, checksums verified; O(their bytes)."""
        if self._memory:
            return [self.log.read(off).payload for off in offsets]
        return [f[5] for f in self.log.read_puts(offsets)]
