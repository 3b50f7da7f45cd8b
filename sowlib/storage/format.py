"""On-disk layout of a sowlib log: file header, record framing and the checkpoint side file.

This module is the executable form of ``docs/storage-format.md``; change both together.
Imports only ``sowlib.errors`` (never ``expr``, ``codecs`` or ``topic``).
"""

from __future__ import annotations

import enum
import mmap
import struct
from typing import NamedTuple

import attrs
import xxhash

from sowlib.errors import CorruptRecordError, FormatVersionError

__all__ = [
    "CHECKPOINT_MAGIC",
    "FORMAT_VERSION",
    "MAGIC",
    "RECORD_ALIGN",
    "RECORD_HEADER_SIZE",
    "RECORD_MARKER",
    "RECORD_OVERHEAD",
    "Checkpoint",
    "FileHeader",
    "LogRecord",
    "RecordKind",
    "decode_checkpoint",
    "decode_header",
    "decode_record",
    "encode_checkpoint",
    "encode_header",
    "encode_record",
    "from_micros",
    "make_record",
    "record_size",
    "to_micros",
]

MAGIC = b"SOWLOG\x00\x01"
"""First eight bytes of every log file."""
FORMAT_VERSION = 1
"""Version written in the header; a reader refuses any other value."""
CHECKPOINT_MAGIC = b"SOWCKPT\x01"
"""First eight bytes of a ``<log>.ckpt`` side file."""

RECORD_MARKER = 0xA55A0FD3
"""Sync marker opening every record (bytes ``d3 0f 5a a5``) so a scanner can resync."""
MARKER_BYTES = struct.pack("<I", RECORD_MARKER)
RECORD_ALIGN = 8
"""Records start on 8-byte boundaries (the header is padded to a multiple of 8)."""

# marker, length, kind, flags, reserved, key_len, corr_len, payload_len, seq, timestamp_us,
# expiration_us -- 48 bytes; key, correlation id, payload and zero padding follow; the
# record ends with an xxh3_64 checksum of everything before it.
RECORD_HEADER = struct.Struct("<IIBBHIIIQqq")
RECORD_HEADER_SIZE = RECORD_HEADER.size
CHECKSUM = struct.Struct("<Q")
RECORD_OVERHEAD = RECORD_HEADER_SIZE + CHECKSUM.size
"""Bytes of framing around key, correlation id and payload (before padding)."""
PREFIX = struct.Struct("<II")  # marker, length: all a recovery walk needs

# magic, version, flags, header_len, generation, created_us, base_seq, meta_len -- 44 bytes;
# meta follows, then an xxh3_64 checksum of everything before it, then zero padding.
FILE_HEADER = struct.Struct("<8sHHIQqQI")
MAX_META = 1 << 24

# magic, version, reserved, reserved, generation, end_offset, records, last_seq,
# last_record_offset, blob_len -- 64 bytes; blob follows, then an xxh3_64 checksum.
CHECKPOINT_HEADER = struct.Struct("<8sHHIQQQQQQ")

Buf = bytes | mmap.mmap
"""Anything a log can be read from: the mapped file or a copy of it."""

PADDING = tuple(bytes(n) for n in range(RECORD_ALIGN))
"""Zero padding by length (indexing beats slicing a zero string on the append path)."""
_hash = xxhash.xxh3_64_intdigest
_new_tuple = tuple.__new__


class RecordKind(enum.IntEnum):
    """What a record means to the topic layer."""

    PUT = 1
    """A full record version (a publish, or a delta already merged)."""
    DELETE = 2
    """Tombstone: the key was deleted (``sow_delete*``)."""
    EXPIRE = 3
    """Tombstone: the key expired."""


KINDS: tuple[RecordKind | None, ...] = (None, RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE)
"""Kind by stored byte; indexing a tuple is ~20x faster than ``RecordKind(value)``."""


class LogRecord(NamedTuple):
    """One decoded record and where it sits in the file (immutable).

    A ``NamedTuple`` rather than an attrs class: scanning and appending build one per record,
    and ``tuple.__new__(LogRecord, fields)`` costs about a quarter of a frozen attrs
    ``__init__``. Callers read attributes only; as a tuple it also unpacks in field order,
    compares equal to a plain tuple of the same fields and offers ``_replace`` for copies.

    Attributes:
        offset: byte offset of the record in the log (stable until the next compaction).
        kind: PUT, DELETE or EXPIRE.
        seq: sequence number (strictly increasing along the file).
        timestamp: seconds since the epoch (stored with microsecond precision).
        expiration: absolute expiry in seconds since the epoch; 0.0 means never.
        key: the SOW key.
        correlation_id: opaque publisher bytes.
        payload: the message bytes (empty for tombstones unless the caller stored some).
    """

    offset: int
    kind: RecordKind
    seq: int
    timestamp: float
    expiration: float
    key: str
    correlation_id: bytes
    payload: bytes


def make_record(
    offset: int,
    kind: RecordKind,
    seq: int,
    timestamp: float,
    expiration: float,
    key: str,
    correlation_id: bytes,
    payload: bytes,
) -> LogRecord:
    """Build a LogRecord from positional fields (same order as the class); O(1).

    Hot loops skip even this call and use ``tuple.__new__(LogRecord, fields)`` directly.
    """
    return _new_tuple(
        LogRecord, (offset, kind, seq, timestamp, expiration, key, correlation_id, payload)
    )


@attrs.frozen
class FileHeader:
    """The decoded file header.

    Attributes:
        version: format version (always FORMAT_VERSION once decoded).
        flags: reserved, 0.
        header_len: size of the header including padding; the first record starts here.
        generation: bumped by every compaction or repair, so readers notice a new file.
        created: creation time of this generation, seconds since the epoch.
        base_seq: highest sequence number ever assigned when this generation was written
            (compaction may drop the newest record; seqs must never be reused).
        meta: opaque bytes from the topic layer (its configuration as JSON).
    """

    version: int
    flags: int
    header_len: int
    generation: int
    created: float
    base_seq: int
    meta: bytes


@attrs.frozen
class Checkpoint:
    """The decoded ``<log>.ckpt`` side file written by a clean close.

    Attributes:
        generation: log generation the blob describes.
        end_offset: log end offset at close; records from here on are not in the blob.
        records: records in the log before end_offset.
        last_seq: the log's last_seq at close.
        last_record_offset: offset of the last record before end_offset (0 if none).
        blob: opaque bytes from the topic layer.
    """

    generation: int
    end_offset: int
    records: int
    last_seq: int
    last_record_offset: int
    blob: bytes


def to_micros(seconds: float) -> int:
    """Return ``seconds`` as integer microseconds (how times are stored)."""
    return round(seconds * 1_000_000)


def from_micros(micros: int) -> float:
    """Return stored microseconds as float seconds."""
    return micros / 1_000_000


def _align(n: int) -> int:
    return (n + RECORD_ALIGN - 1) & ~(RECORD_ALIGN - 1)


def record_size(key_len: int, corr_len: int, payload_len: int) -> int:
    """Return the framed size in bytes of a record with these field sizes; O(1)."""
    return _align(RECORD_OVERHEAD + key_len + corr_len + payload_len)


def encode_record(
    kind: int,
    key: bytes,
    correlation_id: bytes,
    payload: bytes,
    seq: int,
    timestamp_us: int,
    expiration_us: int,
) -> bytes:
    """Frame one record; O(len(payload)).

    Args:
        kind: a RecordKind value.
        key: the key, already UTF-8 encoded.
        correlation_id: opaque bytes.
        payload: message bytes.
        seq: sequence number.
        timestamp_us: microseconds since the epoch.
        expiration_us: absolute expiry in microseconds, 0 for never.
    Returns:
        The record bytes, a multiple of 8 long, ending with the checksum.
    """
    k, c, p = len(key), len(correlation_id), len(payload)
    n = RECORD_HEADER_SIZE + k + c + p
    pad = -n & (RECORD_ALIGN - 1)  # the checksum is 8 bytes, so it keeps the alignment
    head = RECORD_HEADER.pack(
        RECORD_MARKER,
        n + pad + CHECKSUM.size,
        kind,
        0,
        0,
        k,
        c,
        p,
        seq,
        timestamp_us,
        expiration_us,
    )
    body = b"".join((head, key, correlation_id, payload, PADDING[pad]))
    return body + CHECKSUM.pack(_hash(body))


def record_problem(buf: Buf, offset: int, limit: int) -> str | None:
    """Say why no intact record starts at ``offset`` (None when one does); O(record size).

    Args:
        buf: a buffer (bytes, mmap) holding the log.
        offset: where the record should start.
        limit: end of the readable bytes in ``buf``.
    """
    if offset + RECORD_OVERHEAD > limit:
        return "short record"
    (marker, length, kind, _flags, _res, k, c, p, _seq, _ts, _exp) = RECORD_HEADER.unpack_from(
        buf, offset
    )
    if marker != RECORD_MARKER:
        return "bad record marker"
    if length < RECORD_OVERHEAD or length % RECORD_ALIGN:
        return "bad record length"
    if offset + length > limit:
        return "short record"
    end = offset + length - CHECKSUM.size
    if _hash(buf[offset:end]) != CHECKSUM.unpack_from(buf, end)[0]:
        return "checksum mismatch"
    if length != _align(RECORD_OVERHEAD + k + c + p) or not 0 < kind < len(KINDS):
        return "bad record fields"
    return None


def decode_record(buf: Buf, offset: int, limit: int, file: str = "") -> LogRecord:
    """Decode and verify the record at ``offset``; O(record size).

    Raises:
        CorruptRecordError: no intact record starts at ``offset``.
    """
    problem = record_problem(buf, offset, limit)
    if problem is not None:
        raise CorruptRecordError(file, offset, problem)
    (_m, _len, kind, _f, _r, k, c, p, seq, ts, exp) = RECORD_HEADER.unpack_from(buf, offset)
    pos = offset + RECORD_HEADER_SIZE
    data: bytes = buf[pos : pos + k + c + p]
    kind_member = KINDS[kind]
    assert kind_member is not None
    return LogRecord(
        offset,
        kind_member,
        seq,
        ts / 1_000_000,
        exp / 1_000_000,
        data[:k].decode(),
        data[k : k + c],
        data[k + c :],
    )


def encode_header(generation: int, created: float, base_seq: int, meta: bytes) -> bytes:
    """Return the file header bytes, padded to a multiple of 8; O(len(meta))."""
    if len(meta) > MAX_META:
        raise ValueError(f"meta of {len(meta)} bytes exceeds {MAX_META}")
    header_len = _align(FILE_HEADER.size + len(meta) + CHECKSUM.size)
    body = (
        FILE_HEADER.pack(
            MAGIC,
            FORMAT_VERSION,
            0,
            header_len,
            generation,
            to_micros(created),
            base_seq,
            len(meta),
        )
        + meta
    )
    body += CHECKSUM.pack(_hash(body))
    return body + bytes(header_len - len(body))


def decode_header(buf: Buf, size: int, file: str = "") -> FileHeader:
    """Decode and verify the file header at the start of ``buf``; O(len(meta)).

    Raises:
        FormatVersionError: not a sowlib log, or an unknown format version.
        CorruptRecordError: offset 0, the header fails its checksum or sizes.
    """
    if size < len(MAGIC) or buf[: len(MAGIC)] != MAGIC:
        found = bytes(buf[: min(size, len(MAGIC))])
        raise FormatVersionError(file, found, MAGIC)
    if size < FILE_HEADER.size:
        raise CorruptRecordError(file, 0, "file shorter than its header")
    (_magic, version, flags, header_len, generation, created_us, base_seq, meta_len) = (
        FILE_HEADER.unpack_from(buf)
    )
    if version != FORMAT_VERSION:
        raise FormatVersionError(file, version, FORMAT_VERSION)
    end = FILE_HEADER.size + meta_len
    if meta_len > MAX_META or end + CHECKSUM.size > size or header_len != _align(end + 8):
        raise CorruptRecordError(file, 0, "bad header sizes")
    if _hash(buf[:end]) != CHECKSUM.unpack_from(buf, end)[0]:
        raise CorruptRecordError(file, 0, "header checksum mismatch")
    meta = bytes(buf[FILE_HEADER.size : end])
    return FileHeader(
        version, flags, header_len, generation, from_micros(created_us), base_seq, meta
    )


def encode_checkpoint(ckpt: Checkpoint) -> bytes:
    """Return the bytes of a checkpoint side file; O(len(blob))."""
    body = (
        CHECKPOINT_HEADER.pack(
            CHECKPOINT_MAGIC,
            FORMAT_VERSION,
            0,
            0,
            ckpt.generation,
            ckpt.end_offset,
            ckpt.records,
            ckpt.last_seq,
            ckpt.last_record_offset,
            len(ckpt.blob),
        )
        + ckpt.blob
    )
    return body + CHECKSUM.pack(_hash(body))


def decode_checkpoint(data: bytes) -> Checkpoint | None:
    """Decode a checkpoint side file; None when it is damaged or of another version."""
    if len(data) < CHECKPOINT_HEADER.size + CHECKSUM.size:
        return None
    (magic, version, _r1, _r2, gen, end, records, last_seq, last_off, blob_len) = (
        CHECKPOINT_HEADER.unpack_from(data)
    )
    stop = CHECKPOINT_HEADER.size + blob_len
    if magic != CHECKPOINT_MAGIC or version != FORMAT_VERSION or stop + 8 != len(data):
        return None
    if _hash(data[:stop]) != CHECKSUM.unpack_from(data, stop)[0]:
        return None
    return Checkpoint(gen, end, records, last_seq, last_off, data[CHECKPOINT_HEADER.size : stop])
