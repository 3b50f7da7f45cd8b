"""The per-record hot paths: framing appends and walking records for ``scan``.

``frame_one`` / ``frame_batch`` produce exactly the bytes ``format.encode_record`` specifies
(the tests compare them) with as little per-record Python work as possible: one
``Struct.pack`` for the fixed header, one ``join``, one checksum and its ``pack``, and the
LogRecord built with ``tuple.__new__``. ``walk_records`` / ``walk_entries`` are the loops
behind ``AppendLog.scan`` and ``AppendLog.scan_entries``; they follow the log's live state
(its map, end offset and epoch). Imports only ``sowlib.errors`` and sibling storage modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, cast

import xxhash

from sowlib.errors import RecordTooLargeError, StoreClosedError, UnsupportedOperationError
from sowlib.storage.format import (
    CHECKSUM,
    KINDS,
    PADDING,
    RECORD_HEADER,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    LogRecord,
    RecordKind,
)

if TYPE_CHECKING:
    from sowlib.storage.log import AppendLog

__all__ = [
    "BatchItem",
    "ScanEntry",
    "frame_batch",
    "frame_one",
    "frame_puts",
    "walk_entries",
    "walk_records",
]

BatchItem = tuple[RecordKind, str, bytes, float, float, bytes]
"""One ``append_many`` item: ``(kind, key, payload, timestamp, expiration, correlation_id)``."""

ScanEntry = tuple[int, RecordKind, int, float, float, str, bytes, int]
"""What ``AppendLog.scan_entries`` yields: a LogRecord's fields with ``payload_len`` last."""

_KIND_OF = {int(kind): kind for kind in RecordKind}
_new = tuple.__new__


def _bad_kind(kind: object) -> UnsupportedOperationError:
    return UnsupportedOperationError("append", f"unknown record kind {kind!r}")


def frame_one(
    kind: int,
    key: str,
    payload: bytes,
    timestamp: float,
    expiration: float,
    correlation_id: bytes,
    seq: int,
    offset: int,
    limit: int,
) -> tuple[bytes, LogRecord]:
    """Frame one record that will be written at ``offset``; O(len(payload)).

    Args:
        kind: a RecordKind value.
        key: the SOW key (encoded as UTF-8).
        payload: message bytes (any bytes-like; copied when not ``bytes``).
        timestamp: seconds since the epoch, stored to the microsecond.
        expiration: absolute expiry in seconds, 0.0 for never.
        correlation_id: opaque bytes.
        seq: the record's sequence number.
        offset: where the caller will write the bytes (the returned record's offset).
        limit: the largest framed size allowed.
    Returns:
        ``(record bytes, LogRecord as stored)``; times in the record are rounded to µs.
    Raises:
        UnsupportedOperationError: ``kind`` is not a RecordKind value.
        RecordTooLargeError: the framed record is larger than ``limit``.
    """
    member = _KIND_OF.get(kind)
    if member is None:
        raise _bad_kind(kind)
    raw_key = key.encode()
    if type(payload) is not bytes:
        payload = bytes(payload)
    if type(correlation_id) is not bytes:
        correlation_id = bytes(correlation_id)
    k, c, p = len(raw_key), len(correlation_id), len(payload)
    n = RECORD_OVERHEAD + k + c + p
    pad = -n & 7
    length = n + pad
    if length > limit:
        raise RecordTooLargeError(length, limit)
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    head = RECORD_HEADER.pack(RECORD_MARKER, length, member, 0, 0, k, c, p, seq, ts_us, exp_us)
    body = b"".join((head, raw_key, correlation_id, payload, PADDING[pad]))
    rec = _new(
        LogRecord,
        (offset, member, seq, ts_us / 1e6, exp_us / 1e6, key, correlation_id, payload),
    )
    return body + CHECKSUM.pack(xxhash.xxh3_64_intdigest(body)), rec


def frame_batch(
    items: Iterable[BatchItem], seq: int, offset: int, limit: int
) -> tuple[bytes, list[LogRecord]]:
    """Frame a batch written contiguously from ``offset``; seqs ``seq + 1, seq + 2, ...``.

    O(total bytes); nothing is returned (so nothing is written) if one item is bad.

    Args:
        items: ``(kind, key, payload, timestamp, expiration, correlation_id)`` tuples.
        seq: the log's last seq before the batch.
        offset: where the caller will write the bytes.
        limit: the largest framed size allowed for one record.
    Returns:
        ``(all record bytes, the LogRecords in order)``.
    Raises:
        UnsupportedOperationError: an unknown kind.
        RecordTooLargeError: one record is larger than ``limit``.
    """
    pack = RECORD_HEADER.pack
    pack_sum = CHECKSUM.pack
    digest = xxhash.xxh3_64_intdigest
    join = b"".join
    kinds = _KIND_OF.get
    pads = PADDING
    marker = RECORD_MARKER
    parts: list[bytes] = []
    add = parts.append
    records: list[LogRecord] = []
    keep = records.append
    for kind, key, payload, ts, exp, corr in items:
        member = kinds(kind)
        if member is None:
            raise _bad_kind(kind)
        raw_key = key.encode()
        if type(payload) is not bytes:
            payload = bytes(payload)
        if type(corr) is not bytes:
            corr = bytes(corr)
        k, c, p = len(raw_key), len(corr), len(payload)
        n = RECORD_OVERHEAD + k + c + p
        pad = -n & 7
        length = n + pad
        if length > limit:
            raise RecordTooLargeError(length, limit)
        seq += 1
        ts_us = round(ts * 1_000_000)
        exp_us = round(exp * 1_000_000) if exp else 0
        head = pack(marker, length, member, 0, 0, k, c, p, seq, ts_us, exp_us)
        body = join((head, raw_key, corr, payload, pads[pad]))
        add(body)
        add(pack_sum(digest(body)))
        keep(_new(LogRecord, (offset, member, seq, ts_us / 1e6, exp_us / 1e6, key, corr, payload)))
        offset += length
    return join(parts), records


def frame_puts(
    keys: Sequence[str],
    payloads: Sequence[bytes],
    timestamp: float,
    expiration: float,
    seq: int,
    offset: int,
    limit: int,
) -> tuple[bytes, list[int], list[int]]:
    """Frame PUT records that share one timestamp and expiration; O(total bytes).

    The publish hot path: no per-record kind or correlation id, and no LogRecord.
    Nothing is returned (so nothing is written) if one record is too large.

    Args:
        keys: the SOW keys, one per payload.
        payloads: message bytes (``bytes`` objects).
        timestamp: seconds since the epoch for every record.
        expiration: absolute expiry for every record, 0.0 for never.
        seq: the log's last seq before the batch (records get ``seq + 1, ...``).
        offset: where the caller will write the bytes.
        limit: the largest framed size allowed for one record.
    Returns:
        ``(all record bytes, each record's offset, each record's framed size)``.
    Raises:
        RecordTooLargeError: one record is larger than ``limit``.
    """
    pack = RECORD_HEADER.pack
    pack_sum = CHECKSUM.pack
    digest = xxhash.xxh3_64_intdigest
    join = b"".join
    pads = PADDING
    marker = RECORD_MARKER
    put = RecordKind.PUT
    overhead = RECORD_OVERHEAD
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    parts: list[bytes] = []
    add = parts.append
    offsets: list[int] = []
    sizes: list[int] = []
    for key, payload in zip(keys, payloads, strict=True):
        raw_key = key.encode()
        k, p = len(raw_key), len(payload)
        pad = -(overhead + k + p) & 7
        length = overhead + k + p + pad
        if length > limit:
            raise RecordTooLargeError(length, limit)
        seq += 1
        body = join(
            (
                pack(marker, length, put, 0, 0, k, 0, p, seq, ts_us, exp_us),
                raw_key,
                payload,
                pads[pad],
            )
        )
        add(body)
        add(pack_sum(digest(body)))
        offsets.append(offset)
        sizes.append(length)
        offset += length
    return join(parts), offsets, sizes


def walk_records(log: AppendLog, off: int) -> Iterator[LogRecord]:
    """The loop behind ``AppendLog.scan``: records from the record boundary ``off``."""
    epoch = log._epoch
    unpack = RECORD_HEADER.unpack_from
    new = _new
    kinds = cast(tuple[RecordKind, ...], KINDS)  # verified records have a valid kind
    while True:
        mm, end = log._mm, log._end
        if log._epoch is not epoch or mm is None:
            raise StoreClosedError(f"scan of log {log.path} (closed or compacted)")
        if off >= end:
            return
        while off < end:
            (_m, length, kind, _f, _r, k, c, p, seq, ts, exp) = unpack(mm, off)
            pos = off + 48
            stop = pos + k
            key = mm[pos:stop].decode()
            if c:
                pos, stop = stop, stop + c
                corr = mm[pos:stop]
            else:
                corr = b""
            fields = (
                off,
                kinds[kind],
                seq,
                ts / 1e6,
                exp / 1e6,
                key,
                corr,
                mm[stop : stop + p],
            )
            off += length
            yield new(LogRecord, fields)
            if log._epoch is not epoch:
                break


def walk_entries(log: AppendLog, off: int) -> Iterator[ScanEntry]:
    """The loop behind ``AppendLog.scan_entries``: entry tuples from ``off``."""
    epoch = log._epoch
    unpack = RECORD_HEADER.unpack_from
    kinds = cast(tuple[RecordKind, ...], KINDS)
    while True:
        mm, end = log._mm, log._end
        if log._epoch is not epoch or mm is None:
            raise StoreClosedError(f"scan of log {log.path} (closed or compacted)")
        if off >= end:
            return
        while off < end:
            (_m, length, kind, _f, _r, k, c, p, seq, ts, exp) = unpack(mm, off)
            pos = off + 48
            entry = (
                off,
                kinds[kind],
                seq,
                ts / 1e6,
                exp / 1e6,
                mm[pos : pos + k].decode(),
                mm[pos + k : pos + k + c] if c else b"",
                p,
            )
            off += length
            yield entry
            if log._epoch is not epoch:
                break
