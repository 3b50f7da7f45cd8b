"""The per-record read hot paths: walking records for ``scan`` / ``scan_entries`` and recovery.

``walk_records`` / ``walk_entries`` follow the log's live state (its map, end offset and
epoch) over records already verified. ``verify_entries`` is the recovery walk of an open: it
checks every record's checksum and, in the same pass, builds what ``scan_entries`` yields
(as columns, ``storage.entries``), so the first ``scan_entries`` after an open does not
read the file again. Imports only ``sowlib.errors``, ``sowlib.gcpause`` and the storage
modules ``format`` and ``entries`` (never ``log``: the log is seen through
:class:`LiveMap`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from itertools import repeat
from operator import add, sub
from typing import Protocol, cast

import xxhash

from sowlib.errors import StoreClosedError
from sowlib.gcpause import paused_gc
from sowlib.storage.entries import EntryList, ScanEntry, verify_columns
from sowlib.storage.format import (
    CHECKSUM_SIZE,
    FAST_FLAGS,
    FLAG_RESERVED,
    FLAG_U64_KEY,
    HEAD_U64,
    KIND_MASK,
    KINDS,
    PREFIX,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    U64,
    Buf,
    LogRecord,
    RecordKind,
    decode_fields,
    decode_record,
    expected_length,
)

__all__ = [
    "EntryList",
    "LiveMap",
    "PutFields",
    "ScanEntry",
    "put_payloads",
    "read_puts",
    "verify_entries",
    "verify_entries_by_record",
    "walk_entries",
    "walk_records",
]

PutFields = tuple[int, float, float, bytes, int, bytes]
"""What ``read_puts`` gives per record: seq, timestamp, expiration, correlation id, framed
size and payload (times in float seconds, expiration 0.0 when none)."""

_new = tuple.__new__
_FAST_OVERHEAD = RECORD_OVERHEAD + U64.size  # a PUT/DELETE/EXPIRE with only a u64 key


class LiveMap(Protocol):
    """What a walk follows while it runs: the log's current map and end, and its epoch.

    An append may replace the map (the file grew) and move the end; closing or
    compacting the log changes the epoch, which stops the walk.
    """

    path: str
    epoch: object | None

    @property
    def mapped(self) -> Buf | None: ...

    @property
    def end_offset(self) -> int: ...


def walk_records(log: LiveMap, off: int) -> Iterator[LogRecord]:
    """The loop behind ``AppendLog.scan``: records from the record boundary ``off``.

    The epoch is captured at the call, so closing or compacting the log before the first
    ``next`` also raises StoreClosedError.
    """
    return _walk_records(log, off, log.epoch)


def _walk_records(log: LiveMap, off: int, epoch: object) -> Iterator[LogRecord]:
    unpack = HEAD_U64.unpack_from
    new = _new
    kinds = cast(tuple[RecordKind, ...], KINDS)  # verified records have a valid kind
    fields_of = decode_fields
    while True:
        mm, end = log.mapped, log.end_offset
        if log.epoch is not epoch or mm is None:
            raise StoreClosedError(f"scan of log {log.path} (closed or compacted)")
        if off >= end:
            return
        while off < end:
            length, _m, kb, k, p, seq, ts, word = unpack(mm, off)
            if kb & FAST_FLAGS == FLAG_U64_KEY:
                pos = off + _FAST_OVERHEAD - 8
                fields = (off, kinds[kb & KIND_MASK], seq, ts / 1e6, 0.0, str(word), b"")
            else:
                exp, corr, key, pos = fields_of(mm, off, kb, k)
                fields = (off, kinds[kb & KIND_MASK], seq, ts / 1e6, exp / 1e6, key, corr)
            off += length
            yield new(LogRecord, (*fields, mm[pos : pos + p]))
            if log.epoch is not epoch:
                break


def walk_entries(log: LiveMap, off: int, epoch: object | None = None) -> Iterator[ScanEntry]:
    """The loop behind ``AppendLog.scan_entries``: entry tuples from ``off``.

    Args:
        log: the open log.
        off: a record boundary.
        epoch: the log epoch the walk belongs to (default: the current one).
    """
    return _walk_entries(log, off, log.epoch if epoch is None else epoch)


def _walk_entries(log: LiveMap, off: int, epoch: object) -> Iterator[ScanEntry]:
    unpack = HEAD_U64.unpack_from
    kinds = cast(tuple[RecordKind, ...], KINDS)
    fields_of = decode_fields
    while True:
        mm, end = log.mapped, log.end_offset
        if log.epoch is not epoch or mm is None:
            raise StoreClosedError(f"scan of log {log.path} (closed or compacted)")
        if off >= end:
            return
        while off < end:
            length, _m, kb, k, _p, seq, ts, word = unpack(mm, off)
            if kb & FAST_FLAGS == FLAG_U64_KEY:
                entry = (off, kinds[kb & KIND_MASK], seq, ts / 1e6, 0.0, str(word), b"", length)
            else:
                exp, corr, key, _pos = fields_of(mm, off, kb, k)
                entry = (off, kinds[kb & KIND_MASK], seq, ts / 1e6, exp / 1e6, key, corr, length)
            off += length
            yield entry
            if log.epoch is not epoch:
                break


def verify_entries(buf: Buf, start: int, limit: int) -> tuple[int, int, EntryList]:
    """Follow intact records from ``start``, checksums included, collecting their entries.

    O(bytes), one pass over the records (:func:`~sowlib.storage.entries.verify_columns`,
    column at a time; :func:`verify_entries_by_record` is its reference). Stops at the
    first position that does not hold an intact record (bad marker, kind byte, length or
    checksum, or fields that do not add up to the length). The cyclic GC is paused
    meanwhile: nothing allocated can form a cycle.

    Returns:
        ``(offset after the last intact record, offset of the last one or 0, the entries)``.
    """
    with paused_gc():
        end, entries = verify_columns(buf, start, limit)
    return end, entries.last_offset, entries


def verify_entries_by_record(buf: Buf, start: int, limit: int) -> tuple[int, list[ScanEntry]]:
    """The reference of :func:`verify_entries`: one record at a time, every check inline.

    Returns:
        ``(offset after the last intact record, the entries in file order)``.
    """
    unpack = HEAD_U64.unpack_from
    digest = xxhash.xxh3_64_digest
    kinds = KINDS
    marker_ok = RECORD_MARKER
    put_u64 = int(RecordKind.PUT) | FLAG_U64_KEY
    put = RecordKind.PUT
    fast_overhead = _FAST_OVERHEAD
    stop = limit - RECORD_OVERHEAD
    entries: list[ScanEntry] = []
    add = entries.append
    off = start
    while off <= stop:
        length, marker, kb, k, p, seq, ts, word = unpack(buf, off)
        nxt = off + length
        if kb == put_u64 and marker == marker_ok and length == p + fast_overhead and nxt <= limit:
            # The common record: a PUT with a u64 key, no expiration, no correlation id.
            end = nxt - 8
            if k != 8 or digest(buf[off:end]) != buf[end:nxt]:
                break
            add((off, put, seq, ts / 1e6, 0.0, str(word), b"", length))
            off = nxt
            continue
        kind = kinds[kb & KIND_MASK]
        if marker != marker_ok or length < RECORD_OVERHEAD or nxt > limit or kind is None:
            break
        if kb & FLAG_RESERVED or expected_length(buf, off, length, kb, k) != length:
            break
        end = nxt - 8
        if digest(buf[off:end]) != buf[end:nxt]:
            break
        exp, corr, key, _pos = decode_fields(buf, off, kb, k)
        add((off, kind, seq, ts / 1e6, exp / 1e6, key, corr, length))
        off = nxt
    return off, entries


_PUT_U64 = int(RecordKind.PUT) | FLAG_U64_KEY
_PAYLOAD_AT = HEAD_U64.size
_unpack_u64_head = HEAD_U64.unpack_from
_digest = xxhash.xxh3_64_digest


def read_put(buf: Buf, off: int, limit: int, file: str) -> PutFields:
    """The verified fields of the PUT record at ``off``; O(record size).

    What ``decode_record`` checks: the common record (a PUT with a u64 key and nothing
    optional) in a few operations, any other through ``decode_record`` itself, which
    also raises for a record that is not intact.

    Raises:
        CorruptRecordError: no intact record starts at ``off``.
    """
    if 0 <= off <= limit - _FAST_OVERHEAD:
        length, marker, kb, k, p, seq, ts, _word = _unpack_u64_head(buf, off)
        nxt = off + length
        if (
            kb == _PUT_U64
            and marker == RECORD_MARKER
            and k == 8
            and length == p + _FAST_OVERHEAD
            and nxt <= limit
        ):
            end = nxt - 8
            if _digest(buf[off:end]) == buf[end:nxt]:
                return seq, ts / 1e6, 0.0, b"", length, buf[off + _PAYLOAD_AT : end]
    rec = decode_record(buf, off, limit, file)  # raises when not intact
    size = PREFIX.unpack_from(buf, off)[0]
    return rec.seq, rec.timestamp, rec.expiration, rec.correlation_id, size, rec.payload


def read_puts(buf: Buf, offsets: list[int], limit: int, file: str) -> list[PutFields]:
    """:func:`read_put` of each of ``offsets``, in that order; O(their bytes).

    Raises:
        CorruptRecordError: no intact record starts at one of ``offsets``.
    """
    return [read_put(buf, off, limit, file) for off in offsets]


_PUT = int(RecordKind.PUT)
_PAYLOAD_HEAD = struct.Struct("<IBBxxI")  # length, marker, kind byte, payload length


def put_payloads(buf: Buf, offsets: list[int], limit: int) -> list[bytes] | None:
    """The payloads of the PUT records at ``offsets`` (ascending, records a walk of this
    open verified), checksums not checked again, or None when one does not look like a
    PUT record within ``limit``; O(bytes spanned).

    One copy of the bytes the records span, then C-level slices: whatever a record's
    layout, its payload ends where its checksum starts. (The reference of the C form,
    ``recordread.put_payloads``.)
    """
    if not offsets:
        return []
    start = offsets[0]
    data = buf[start:limit]
    rel = list(map(sub, offsets, repeat(start)))
    try:
        heads = list(map(_PAYLOAD_HEAD.unpack_from, repeat(data), rel))
    except struct.error:  # the last record is longer than the bytes read
        return None
    lengths, markers, kinds, sizes = zip(*heads, strict=True)
    if markers.count(RECORD_MARKER) != len(offsets) or rel[-1] + lengths[-1] > len(data):
        return None
    if any(kind & KIND_MASK != _PUT or kind & FLAG_RESERVED for kind in set(kinds)):
        return None
    ends = list(map(add, rel, map(add, lengths, repeat(-CHECKSUM_SIZE))))
    return list(map(data.__getitem__, map(slice, map(sub, ends, sizes), ends)))
