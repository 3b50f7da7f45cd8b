"""The per-record append hot paths: framing records exactly as ``format.encode_record`` does.

``frame_one`` / ``frame_batch`` / ``frame_puts`` produce the bytes ``format.encode_record``
specifies (the tests compare them) with as little per-record Python work as possible: one
``Struct.pack`` for the fixed header (and, for a u64 key, the key too), one concatenation,
one checksum (its digest bytes are stored as they come). The scan loops live in
``sowlib.storage.walk`` and are re-exported here. Imports only ``sowlib.errors`` and sibling
storage modules.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain, repeat
from typing import Any

import xxhash

from sowlib.errors import RecordTooLargeError, UnsupportedOperationError
from sowlib.storage.format import (
    CORR_LEN,
    EXPIRATION,
    FLAG_CORRELATION,
    FLAG_EXPIRATION,
    FLAG_U64_KEY,
    HEAD_EXP,
    HEAD_EXP_U64,
    HEAD_U64,
    MAX_FIELD,
    RECORD_HEADER,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    U64,
    U64_DIGITS,
    U64_LIMIT,
    LogRecord,
    RecordKind,
    check_field_sizes,
)
from sowlib.storage.native import optional_module
from sowlib.storage.walk import ScanEntry, walk_entries, walk_records

__all__ = [
    "NATIVE_PUTS_U64",
    "puts_u64",
    "BatchItem",
    "ScanEntry",
    "frame_batch",
    "frame_one",
    "frame_put_u64",
    "frame_puts",
    "framed_size",
    "walk_entries",
    "walk_records",
]

BatchItem = tuple[RecordKind, str, bytes, float, float, bytes]
"""One ``append_many`` item: ``(kind, key, payload, timestamp, expiration, correlation_id)``."""

_KIND_OF = {int(kind): kind for kind in RecordKind}
_new = tuple.__new__
_U64_SIZE = U64.size
_EXP_SIZE = EXPIRATION.size
_FRAMEPACK = optional_module("sowlib.storage.framepack")
#: The C form of :func:`puts_u64`'s framing (``framepack.c``), or None.
NATIVE_PUTS_U64: Any = None if _FRAMEPACK is None else _FRAMEPACK.puts_u64


def _bad_kind(kind: object) -> UnsupportedOperationError:
    return UnsupportedOperationError("append", f"unknown record kind {kind!r}")


def framed_size(key: str, corr_len: int, payload_len: int, expiration: float) -> int:
    """Return the exact bytes a record with these fields occupies in a log file; O(len(key)).

    Args:
        key: the SOW key text (a canonical u64 decimal is stored in 8 bytes).
        corr_len: bytes of the correlation id.
        payload_len: bytes of the payload.
        expiration: absolute expiry in seconds, 0.0 for never (stored only when non-zero
            once rounded to the microsecond).
    """
    raw = key.encode()
    k = len(raw)
    if raw.isdigit() and k <= U64_DIGITS and (raw[0] != 48 or k == 1) and int(key) < U64_LIMIT:
        k = _U64_SIZE
    size = RECORD_OVERHEAD + k + payload_len
    if corr_len:
        size += CORR_LEN.size + corr_len
    if expiration and round(expiration * 1_000_000):
        size += _EXP_SIZE
    return size


def _encode(
    kind: int, key: str, payload: bytes, ts_us: int, exp_us: int, corr: bytes, seq: int
) -> bytes:
    """The bytes of one record, checksum included (general case of every kind and flag)."""
    raw = key.encode()
    k = len(raw)
    if raw.isdigit() and k <= U64_DIGITS and (raw[0] != 48 or k == 1) and int(key) < U64_LIMIT:
        kind |= FLAG_U64_KEY
        raw = U64.pack(int(key))
        k = _U64_SIZE
    c = len(corr)
    if k > MAX_FIELD or c > MAX_FIELD:
        check_field_sizes(raw, corr)
    p = len(payload)
    length = RECORD_OVERHEAD + k + p
    extra = b""
    if exp_us:
        kind |= FLAG_EXPIRATION
        length += _EXP_SIZE
        extra = EXPIRATION.pack(exp_us)
    if c:
        kind |= FLAG_CORRELATION
        length += CORR_LEN.size + c
        extra += CORR_LEN.pack(c) + corr
    head = RECORD_HEADER.pack(length, RECORD_MARKER, kind, k, p, seq, ts_us)
    body = b"".join((head, extra, raw, payload))
    return body + xxhash.xxh3_64_digest(body)


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
        key: the SOW key (a u64 when canonical, else UTF-8 text).
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
        UnsupportedOperationError: ``kind`` is not a RecordKind value, or the key or
            correlation id is longer than 65535 bytes.
        RecordTooLargeError: the framed record is larger than ``limit``.
    """
    member = _KIND_OF.get(kind)
    if member is None:
        raise _bad_kind(kind)
    if type(payload) is not bytes:
        payload = bytes(payload)
    if type(correlation_id) is not bytes:
        correlation_id = bytes(correlation_id)
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    data = _encode(member, key, payload, ts_us, exp_us, correlation_id, seq)
    if len(data) > limit:
        raise RecordTooLargeError(len(data), limit)
    rec = _new(
        LogRecord,
        (offset, member, seq, ts_us / 1e6, exp_us / 1e6, key, correlation_id, payload),
    )
    return data, rec


_PUT_U64 = int(RecordKind.PUT) | FLAG_U64_KEY
_PUT_U64_BASE = RECORD_OVERHEAD + _U64_SIZE
_pack_u64 = HEAD_U64.pack
_digest = xxhash.xxh3_64_digest


def frame_put_u64(
    key: int, payload: bytes, ts_us: int, seq: int, limit: int
) -> tuple[bytes, bytes]:
    """The bytes of a PUT of u64 ``key`` (below 2**64) with no expiration and no
    correlation id, as ``(body, checksum)``: ``body + checksum`` is what :func:`frame_one`
    frames for ``str(key)`` (``tests/storage/test_framing_fast.py``); O(len(payload)).

    The per-message publish path: one pack of the header with the key, one
    concatenation, one checksum.

    Raises:
        RecordTooLargeError: the framed record is larger than ``limit``.
        struct.error: ``key`` is not a u64.
    """
    p = len(payload)
    length = _PUT_U64_BASE + p
    if length > limit:
        raise RecordTooLargeError(length, limit)
    body = _pack_u64(length, RECORD_MARKER, _PUT_U64, 8, p, seq, ts_us, key) + payload
    return body, _digest(body)


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
        UnsupportedOperationError: an unknown kind, or a key or correlation id longer than
            65535 bytes.
        RecordTooLargeError: one record is larger than ``limit``.
    """
    kinds = _KIND_OF.get
    encode = _encode
    parts: list[bytes] = []
    add = parts.append
    records: list[LogRecord] = []
    keep = records.append
    for kind, key, payload, ts, exp, corr in items:
        member = kinds(kind)
        if member is None:
            raise _bad_kind(kind)
        if type(payload) is not bytes:
            payload = bytes(payload)
        if type(corr) is not bytes:
            corr = bytes(corr)
        seq += 1
        ts_us = round(ts * 1_000_000)
        exp_us = round(exp * 1_000_000) if exp else 0
        data = encode(member, key, payload, ts_us, exp_us, corr, seq)
        length = len(data)
        if length > limit:
            raise RecordTooLargeError(length, limit)
        add(data)
        keep(_new(LogRecord, (offset, member, seq, ts_us / 1e6, exp_us / 1e6, key, corr, payload)))
        offset += length
    return b"".join(parts), records


def frame_puts(
    keys: Sequence[str],
    payloads: Sequence[bytes],
    timestamp: float,
    expiration: float,
    seq: int,
    offset: int,
    limit: int,
    key_ints: Sequence[int] | None = None,
) -> tuple[bytes, list[int], list[int]]:
    """Frame PUT records that share one timestamp and expiration; O(total bytes).

    The publish hot path: no per-record kind or correlation id, and no LogRecord; a u64 key
    is packed with the fixed header in one call. Nothing is returned (so nothing is
    written) if one record is too large.

    Args:
        keys: the SOW keys, one per payload.
        payloads: message bytes (``bytes`` objects).
        timestamp: seconds since the epoch for every record.
        expiration: absolute expiry for every record, 0.0 for never.
        seq: the log's last seq before the batch (records get ``seq + 1, ...``).
        offset: where the caller will write the bytes.
        limit: the largest framed size allowed for one record.
        key_ints: when given, ``keys[i] == str(key_ints[i])`` and each is below 2**64
            (content keys): packed as they are, without parsing the text.
    Returns:
        ``(all record bytes, each record's offset, each record's framed size)``.
    Raises:
        RecordTooLargeError: one record is larger than ``limit``.
        UnsupportedOperationError: a key longer than 65535 bytes.
    """
    try:
        if key_ints is not None:
            data, sizes = puts_u64(key_ints, payloads, timestamp, expiration, seq)
        else:
            data, sizes = _puts_fast(keys, payloads, timestamp, expiration, seq)
    except (struct.error, ValueError):
        # A key of digits beyond the u64 range: the fast loop does not check the range
        # (the pack refuses it); frame the whole batch the general way instead.
        data, sizes = _puts_general(keys, payloads, timestamp, expiration, seq)
    if sizes and max(sizes) > limit:
        raise RecordTooLargeError(max(sizes), limit)
    offsets = list(accumulate(sizes, initial=offset))
    offsets.pop()
    return data, offsets, sizes


def _puts_general(
    keys: Sequence[str], payloads: Sequence[bytes], timestamp: float, expiration: float, seq: int
) -> tuple[bytes, list[int]]:
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    parts = [
        _encode(1, key, payload, ts_us, exp_us, b"", seq)
        for seq, (key, payload) in enumerate(zip(keys, payloads, strict=True), seq + 1)
    ]
    return b"".join(parts), [len(part) for part in parts]


def puts_u64(
    key_ints: Sequence[int],
    payloads: Sequence[bytes],
    timestamp: float,
    expiration: float,
    seq: int,
    native: Any = NATIVE_PUTS_U64,
) -> tuple[bytes, list[int]]:
    """The bytes and framed sizes of PUT records keyed by the u64 ``key_ints`` (record
    ``i`` gets seq ``seq + 1 + i``): :func:`frame_puts`'s path for content keys.

    Every stage is a C-level map: header packs, header + payload, checksums, and one
    join of body, checksum, body, checksum... The C form ``native`` (``framepack.c``;
    None: these maps, the reference) writes the same bytes in one pass; anything it
    refuses (a key out of range, a payload that is not bytes) is framed by the maps,
    which raise what they raise (``struct.error`` for a key out of range).
    """
    if len(key_ints) != len(payloads):
        raise ValueError("one key per payload")
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    if native is not None and type(key_ints) is list and type(payloads) is list:
        # What the C form refuses falls through to the maps, which frame it or raise
        # the precise error.
        with contextlib.suppress(TypeError, OverflowError):
            got: tuple[bytes, list[int]] = native(key_ints, payloads, ts_us, exp_us, seq)
            return got
    kind = int(RecordKind.PUT) | FLAG_U64_KEY
    base = RECORD_OVERHEAD + _U64_SIZE
    sizes = list(map(len, payloads))
    seqs = range(seq + 1, seq + 1 + len(sizes))
    common = (repeat(RECORD_MARKER), repeat(kind | FLAG_EXPIRATION if exp_us else kind), repeat(8))
    if exp_us:
        base += _EXP_SIZE
        lengths = list(map(base.__add__, sizes))
        heads = map(
            HEAD_EXP_U64.pack,
            lengths,
            *common,
            sizes,
            seqs,
            repeat(ts_us),
            repeat(exp_us),
            key_ints,
        )
    else:
        lengths = list(map(base.__add__, sizes))
        heads = map(HEAD_U64.pack, lengths, *common, sizes, seqs, repeat(ts_us), key_ints)
    bodies = list(map(bytes.__add__, heads, payloads))
    data = b"".join(
        chain.from_iterable(zip(bodies, map(xxhash.xxh3_64_digest, bodies), strict=True))
    )
    return data, lengths


def _puts_fast(
    keys: Sequence[str], payloads: Sequence[bytes], timestamp: float, expiration: float, seq: int
) -> tuple[bytes, list[int]]:
    digest = xxhash.xxh3_64_digest
    marker = RECORD_MARKER
    ts_us = round(timestamp * 1_000_000)
    exp_us = round(expiration * 1_000_000) if expiration else 0
    kind = int(RecordKind.PUT)
    base = RECORD_OVERHEAD
    if exp_us:
        kind |= FLAG_EXPIRATION
        base += _EXP_SIZE
    kind_u64 = kind | FLAG_U64_KEY
    base_u64 = base + _U64_SIZE
    pack_u64 = HEAD_EXP_U64.pack if exp_us else HEAD_U64.pack
    pack_text = HEAD_EXP.pack if exp_us else RECORD_HEADER.pack
    parts: list[bytes] = []
    add = parts.append
    sizes: list[int] = []
    add_size = sizes.append
    for key, payload in zip(keys, payloads, strict=True):
        raw = key.encode()
        p = len(payload)
        seq += 1
        if raw.isdigit() and (raw[0] != 48 or len(raw) == 1):
            # Canonical digits: int() and the pack raise beyond the u64 range.
            length = base_u64 + p
            if exp_us:
                body = pack_u64(length, marker, kind_u64, 8, p, seq, ts_us, exp_us, int(key))
            else:
                body = pack_u64(length, marker, kind_u64, 8, p, seq, ts_us, int(key))
            body += payload
        else:
            k = len(raw)
            if k > MAX_FIELD:
                check_field_sizes(raw, b"")
            length = base + k + p
            if exp_us:
                head = pack_text(length, marker, kind, k, p, seq, ts_us, exp_us)
            else:
                head = pack_text(length, marker, kind, k, p, seq, ts_us)
            body = b"".join((head, raw, payload))
        add(body)
        add(digest(body))
        add_size(length)
    return b"".join(parts), sizes
