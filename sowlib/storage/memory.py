"""An in-memory log with the :class:`~sowlib.storage.log.AppendLog` interface.

Backs ``durability="transient"`` topics and ``SowStore()`` without a path:
nothing touches the disk. Imports only ``errors`` and the storage records.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from sowlib.errors import StoreClosedError
from sowlib.storage.entries import EntryList
from sowlib.storage.format import LogRecord, RecordKind

__all__ = ["MemoryLog"]

_new = tuple.__new__


class MemoryLog:
    """Records kept in a list; offsets are list positions. Not thread-safe by itself."""

    readonly = False
    generation = 0
    path = "<memory>"

    def __init__(self, meta: bytes = b"") -> None:
        self.meta = meta
        self._records: list[LogRecord | None] = []
        self._closed = False
        self.last_seq = 0
        #: The estimated framed size of every record held (``len(payload) + len(key) +
        #: 48`` each, the size :meth:`append_puts` reports): what a file log's end
        #: offset is to its garbage ratio (``end_offset`` here counts records).
        self.used_bytes = 0

    @property
    def end_offset(self) -> int:
        return len(self._records)

    @property
    def file_size(self) -> int:
        return sum(len(r.payload) + len(r.key) + 48 for r in self._records if r is not None)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def record_count(self) -> int:
        """Records held (every kind, superseded versions included)."""
        return sum(r is not None for r in self._records)

    def _check(self) -> None:
        if self._closed:
            raise StoreClosedError("transient topic log")

    def append(
        self,
        kind: RecordKind,
        key: str,
        payload: bytes,
        *,
        timestamp: float,
        expiration: float = 0.0,
        correlation_id: bytes = b"",
        seq: int | None = None,
    ) -> LogRecord:
        """Append one record; O(1)."""
        self._check()
        seq = self.last_seq + 1 if seq is None else seq
        records = self._records
        # (offset, kind, seq, timestamp, expiration, key, correlation_id, payload): built
        # as a tuple of its fields, not through the named tuple's __new__ frame
        fields = (len(records), kind, seq, timestamp, expiration, key, correlation_id, payload)
        rec = _new(LogRecord, fields)
        records.append(rec)
        self.last_seq = seq
        self.used_bytes += len(payload) + len(key) + 48
        return rec

    def append_many(
        self, items: Iterable[tuple[RecordKind, str, bytes, float, float, bytes]]
    ) -> list[LogRecord]:
        """Append several records in order."""
        return [
            self.append(k, key, p, timestamp=ts, expiration=exp, correlation_id=corr)
            for k, key, p, ts, exp, corr in items
        ]

    def append_puts(
        self,
        keys: Sequence[str],
        payloads: Sequence[bytes],
        timestamp: float,
        expiration: float,
        key_ints: Sequence[int] | None = None,
    ) -> tuple[list[int], list[int], int]:
        """Like ``AppendLog.append_puts``: (offsets, sizes, first seq); sizes are estimates."""
        self._check()
        first = self.last_seq + 1
        start = len(self._records)
        put = RecordKind.PUT
        self._records.extend(
            _new(LogRecord, (start + i, put, first + i, timestamp, expiration, key, b"", payload))
            for i, (key, payload) in enumerate(zip(keys, payloads, strict=True))
        )
        self.last_seq = first + len(keys) - 1
        sizes = [len(p) + len(k) + 48 for k, p in zip(keys, payloads, strict=True)]
        self.used_bytes += sum(sizes)
        return list(range(start, start + len(keys))), sizes, first

    def read(self, offset: int) -> LogRecord:
        """The record at ``offset``; O(1)."""
        self._check()
        rec = self._records[offset]
        if rec is None:
            raise KeyError(offset)
        return rec

    def read_payload(self, offset: int) -> bytes:
        """The payload of the record at ``offset``; O(1)."""
        return self.read(offset).payload

    def scan(self, start: int | None = None) -> Iterator[LogRecord]:
        """Records in append order from ``start``."""
        self._check()
        for rec in self._records[start or 0 :]:
            if rec is not None:
                yield rec

    def scan_entries(
        self, start: int | None = None
    ) -> Iterator[tuple[int, RecordKind, int, float, float, str, bytes, int]]:
        """Like ``AppendLog.scan_entries``: header fields and an estimated framed size.

        The size is ``len(payload) + len(key) + 48``, the estimate ``append_puts`` returns.
        """
        for r in self.scan(start):
            yield (
                r.offset,
                r.kind,
                r.seq,
                r.timestamp,
                r.expiration,
                r.key,
                r.correlation_id,
                len(r.payload) + len(r.key) + 48,
            )

    def scan_columns(self, start: int | None = None) -> EntryList:
        """Like ``AppendLog.scan_columns``: :meth:`scan_entries` as columns."""
        entries = EntryList()
        for entry in self.scan_entries(start):
            entries.append(entry)
        return entries

    def compact(
        self,
        keep: Callable[[LogRecord], bool] | Collection[int],
        meta: bytes | None = None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> dict[int, int]:
        """Drop records ``keep`` rejects (a predicate, or the offsets to keep).

        Returns old -> new offsets of the kept records.
        """
        self._check()
        wanted = None if callable(keep) else set(keep)
        mapping: dict[int, int] = {}
        kept: list[LogRecord | None] = []
        for rec in self._records:
            if rec is None:
                continue
            if keep(rec) if wanted is None else rec.offset in wanted:  # type: ignore[operator]
                mapping[rec.offset] = len(kept)
                kept.append(_new(LogRecord, (len(kept), *rec[1:])))  # the offset changes
        self._records = kept
        self.used_bytes = sum(len(r.payload) + len(r.key) + 48 for r in kept if r is not None)
        if meta is not None:
            self.meta = meta
        if progress is not None:
            progress(len(mapping), len(mapping))
        return mapping

    def load_checkpoint(self) -> tuple[bytes, int] | None:
        """Transient logs never have a checkpoint."""
        return None

    def refresh(self) -> EntryList | None:
        """Nothing to refresh: there is no other writer."""
        return EntryList()

    def flush(self) -> None:
        """Nothing to flush."""
        self._check()

    def check(self) -> None:
        """Sequence numbers increase."""
        last = 0
        for rec in self._records:
            if rec is not None:
                assert rec.seq > last, f"seq {rec.seq} after {last}"
                last = rec.seq

    def close(self, checkpoint: bytes | None = None) -> None:
        """Drop everything; idempotent."""
        self._closed = True
        self._records = []
        self.used_bytes = 0
