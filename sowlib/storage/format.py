"""On-disk layout of a sowlib log: the file header and the record framing.

This module is the executable form of ``docs/storage-format.md`` (the checkpoint side file
is in ``checkpoint.py``); change both together.
Imports only ``sowlib.errors`` (never ``expr``, ``codecs`` or ``topic``).
"""

from __future__ import annotations

import enum
import mmap
import struct
from typing import NamedTuple

import attrs
import xxhash

from sowlib.errors import CorruptRecordError, FormatVersionError, UnsupportedOperationError

__all__ = [
    "COMMIT_SLOT",
    "FORMAT_VERSION",
    "MAGIC",
    "HEADER_ALIGN",
    "HEAD_BYTES",
    "RECORD_HEADER_SIZE",
    "RECORD_MARKER",
    "RECORD_OVERHEAD",
    "FileHeader",
    "LogRecord",
    "RecordKind",
    "check_field_sizes",
    "commit_slot_offset",
    "decode_fields",
    "decode_header",
    "decode_intact",
    "decode_record",
    "encode_commit",
    "encode_header",
    "encode_record",
    "expected_length",
    "from_micros",
    "make_record",
    "read_commit",
    "record_problem",
    "record_size",
    "stored_key",
    "to_micros",
    "u64_key",
]

MAGIC = b"SOWLOG\x00\x01"
"""First eight bytes of every log file."""
FORMAT_VERSION = 3
"""Version written in the header; a reader refuses any other value (versions 1 and 2 too)."""
_OLD_VERSION_HINT = (
    "format 2 (a pre-release sowlib) has no commit record, so a damaged last record could"
    " pass for a torn write; export the data with the sowlib that wrote it and publish it"
    " into a new store"
)

HEAD_BYTES = 8
"""A record's first bytes (length, marker, kind, key length): an append writes them last, so
bytes after the end that start with this many zeros are a write in flight, never damage."""
RECORD_MARKER = 0xF5
"""Byte 4 of every record (never part of UTF-8 text) so a scanner can resync after damage."""
MARKER_BYTES = bytes([RECORD_MARKER])
HEADER_ALIGN = 8
"""The file header is padded to a multiple of 8 bytes; records themselves are not aligned."""

KIND_MASK = 0x0F
"""Low bits of the ``kind`` byte: the RecordKind value."""
FLAG_EXPIRATION = 0x10
"""An ``i64`` expiration follows the fixed header."""
FLAG_CORRELATION = 0x20
"""A ``u16`` length and the correlation id follow (after the expiration, if any)."""
FLAG_U64_KEY = 0x40
"""The key is stored as a ``u64`` (its text is the canonical decimal of that number)."""
FLAG_RESERVED = 0x80
"""Must be zero; a record with it set is not intact."""
FAST_FLAGS = 0xF0
"""Mask selecting every flag bit; ``kind_byte & FAST_FLAGS == FLAG_U64_KEY`` is the common case."""

# length, marker, kind|flags, key_len, payload_len, seq, timestamp_us -- 28 bytes; then the
# optional expiration and correlation id, the key, the payload, and an xxh3_64 checksum of
# everything before it.
RECORD_HEADER = struct.Struct("<IBBHIQq")
RECORD_HEADER_SIZE = RECORD_HEADER.size
HEAD_U64 = struct.Struct("<IBBHIQqQ")
"""Fixed header and a u64 key (or, read back, the fixed header and the next 8 bytes)."""
HEAD_EXP_U64 = struct.Struct("<IBBHIQqqQ")
"""Fixed header, expiration and a u64 key."""
HEAD_EXP = struct.Struct("<IBBHIQqq")
"""Fixed header and expiration."""
CHECKSUM = struct.Struct("<Q")
"""File header checksum: xxh3_64 as a little-endian u64."""
CHECKSUM_SIZE = 8
"""Record checksum: the 8 bytes of the xxh3_64 digest in canonical (big-endian) order."""
EXPIRATION = struct.Struct("<q")
CORR_LEN = struct.Struct("<H")
U64 = struct.Struct("<Q")
RECORD_OVERHEAD = RECORD_HEADER_SIZE + CHECKSUM_SIZE
"""Bytes of framing of a record without expiration or correlation id (36)."""
PREFIX = struct.Struct("<IB")  # length, marker
MAX_FIELD = 0xFFFF
"""Largest stored key or correlation id, in bytes (their lengths are ``u16``)."""
U64_LIMIT = 1 << 64
U64_DIGITS = 20
"""Longest canonical decimal of a u64 (``18446744073709551615``)."""

# magic, version, flags, header_len, generation, created_us, base_seq, meta_len -- 44 bytes;
# meta follows, then an xxh3_64 checksum of everything before it, then zero padding.
FILE_HEADER = struct.Struct("<8sHHIQqQI")
MAX_META = 1 << 24
# Two commit slots follow the checksummed header: counter, committed end, check. The newer
# valid slot (higher counter) says how far the log is known to be complete; a write goes to
# the other slot, so a slot torn by a crash leaves the previous commit readable.
COMMIT_SLOT = struct.Struct("<QQQ")
COMMIT_SLOTS = 2
_COMMIT_SEED = 0x534F57434F4D4954  # b"SOWCOMIT": a zeroed slot never checks out
_COMMIT_BODY = struct.Struct("<QQ")


Buf = bytes | mmap.mmap
"""Anything a log can be read from: the mapped file or a copy of it."""

_hash = xxhash.xxh3_64_intdigest
_digest = xxhash.xxh3_64_digest
_new_tuple = tuple.__new__


class RecordKind(enum.IntEnum):
    """What a record means to the topic layer."""

    PUT = 1
    """A full record version (a publish, or a delta already merged)."""
    DELETE = 2
    """Tombstone: the key was deleted (``sow_delete*``)."""
    EXPIRE = 3
    """Tombstone: the key expired."""


KINDS: tuple[RecordKind | None, ...] = (
    None,
    RecordKind.PUT,
    RecordKind.DELETE,
    RecordKind.EXPIRE,
    *(None,) * (KIND_MASK - 3),
)
"""Kind by ``kind_byte & KIND_MASK``: a tuple index, not an enum lookup, per record."""


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
        commit_at: offset of the two commit slots (inside the header).
        committed: end of the records a clean close, a flush or a compaction recorded as
            complete (``header_len`` when no slot is valid): a bad record before it is
            corruption, never a torn write.
        commit_counter: counter of the slot ``committed`` came from (0: none valid).
    """

    version: int
    flags: int
    header_len: int
    generation: int
    created: float
    base_seq: int
    meta: bytes
    commit_at: int = 0
    committed: int = 0
    commit_counter: int = 0


def to_micros(seconds: float) -> int:
    """Return ``seconds`` as integer microseconds (how times are stored)."""
    return round(seconds * 1_000_000)


def from_micros(micros: int) -> float:
    """Return stored microseconds as float seconds."""
    return micros / 1_000_000


def _align(n: int) -> int:
    return (n + HEADER_ALIGN - 1) & ~(HEADER_ALIGN - 1)


def u64_key(raw: bytes) -> int | None:
    """Return the number whose canonical decimal is ``raw``, or None; O(len(raw)).

    Canonical: ASCII digits only, no sign, no leading zero unless the text is ``0``, and a
    value below ``2**64``. Such a key is stored as 8 bytes; every other key as UTF-8 text.
    """
    if not raw.isdigit() or len(raw) > U64_DIGITS or (raw[0] == 48 and len(raw) > 1):
        return None
    n = int(raw)
    return n if n < U64_LIMIT else None


def stored_key(key: bytes) -> tuple[int, bytes]:
    """Return ``(flag, stored bytes)`` for a UTF-8 key: a u64 when canonical, else the text."""
    n = u64_key(key)
    if n is not None:
        return FLAG_U64_KEY, U64.pack(n)
    return 0, key


def record_size(key_len: int, corr_len: int, payload_len: int, expiration: bool = False) -> int:
    """Return the framed size in bytes of a record with these stored field sizes; O(1).

    Args:
        key_len: bytes of the stored key (8 for a u64 key).
        corr_len: bytes of the correlation id (0: none, and no length field either).
        payload_len: bytes of the payload.
        expiration: the record carries an expiration.
    """
    size = RECORD_OVERHEAD + key_len + payload_len
    if corr_len:
        size += CORR_LEN.size + corr_len
    return size + EXPIRATION.size if expiration else size


def encode_record(
    kind: int,
    key: bytes,
    correlation_id: bytes,
    payload: bytes,
    seq: int,
    timestamp_us: int,
    expiration_us: int,
) -> bytes:
    """Frame one record (the reference encoder the fast paths are tested against).

    O(len(payload)).

    Args:
        kind: a RecordKind value.
        key: the key text, UTF-8 encoded (stored as a u64 when it is a canonical decimal).
        correlation_id: opaque bytes (flagged and stored only when non-empty).
        payload: message bytes.
        seq: sequence number.
        timestamp_us: microseconds since the epoch.
        expiration_us: absolute expiry in microseconds, 0 for never (then not stored).
    Returns:
        The record bytes, ending with the checksum.
    Raises:
        UnsupportedOperationError: the key or correlation id is longer than 65535 bytes.
    """
    flag, raw = stored_key(key)
    check_field_sizes(raw, correlation_id)
    parts = [b"", b"", b"", raw, payload]
    if expiration_us:
        flag |= FLAG_EXPIRATION
        parts[0] = EXPIRATION.pack(expiration_us)
    if correlation_id:
        flag |= FLAG_CORRELATION
        parts[1], parts[2] = CORR_LEN.pack(len(correlation_id)), correlation_id
    length = record_size(len(raw), len(correlation_id), len(payload), bool(expiration_us))
    head = RECORD_HEADER.pack(
        length, RECORD_MARKER, kind | flag, len(raw), len(payload), seq, timestamp_us
    )
    body = head + b"".join(parts)
    return body + _digest(body)


def check_field_sizes(raw_key: bytes, correlation_id: bytes) -> None:
    """Refuse a stored key or correlation id whose length does not fit its ``u16``.

    Raises:
        UnsupportedOperationError: naming the field and its size.
    """
    for name, value in (("key", raw_key), ("correlation id", correlation_id)):
        if len(value) > MAX_FIELD:
            raise UnsupportedOperationError(
                "append", f"a {name} of {len(value)} bytes (at most {MAX_FIELD})"
            )


def expected_length(buf: Buf, offset: int, length: int, kind_byte: int, key_len: int) -> int:
    """Return the length the fields of the record at ``offset`` add up to, or -1; O(1).

    ``length`` bounds every read (the correlation length is inside the record or not read).
    """
    payload_len: int = RECORD_HEADER.unpack_from(buf, offset)[4]
    size = RECORD_OVERHEAD + key_len + payload_len
    pos = offset + RECORD_HEADER_SIZE
    if kind_byte & FLAG_EXPIRATION:
        size += EXPIRATION.size
        pos += EXPIRATION.size
    if kind_byte & FLAG_CORRELATION:
        if pos + CORR_LEN.size > offset + length - CHECKSUM_SIZE:
            return -1
        size += CORR_LEN.size + CORR_LEN.unpack_from(buf, pos)[0]
    if kind_byte & FLAG_U64_KEY and key_len != U64.size:
        return -1
    return size


def record_problem(buf: Buf, offset: int, limit: int) -> str | None:
    """Say why no intact record starts at ``offset`` (None when one does); O(record size).

    Cheap checks (marker, kind byte, length against the fields) come before the checksum, so
    a scanner looking for records in damaged bytes rejects most candidates without hashing.

    Args:
        buf: a buffer (bytes, mmap) holding the log.
        offset: where the record should start.
        limit: end of the readable bytes in ``buf``.
    """
    if offset < 0 or offset + RECORD_OVERHEAD > limit:
        return "short record"
    length, marker, kind_byte, key_len = RECORD_HEADER.unpack_from(buf, offset)[:4]
    if marker != RECORD_MARKER:
        return "bad record marker"
    if kind_byte & FLAG_RESERVED or KINDS[kind_byte & KIND_MASK] is None:
        return "bad record kind"
    if length < RECORD_OVERHEAD:
        return "bad record length"
    if offset + length > limit:
        return "short record"
    if expected_length(buf, offset, length, kind_byte, key_len) != length:
        return "bad record length"
    end = offset + length - CHECKSUM_SIZE
    if _digest(buf[offset:end]) != buf[end : end + CHECKSUM_SIZE]:
        return "checksum mismatch"
    return None


def decode_fields(
    buf: Buf, offset: int, kind_byte: int, key_len: int, file: str = ""
) -> tuple[int, bytes, str, int]:
    """Read the variable part of a record known to be intact; O(key + correlation id).

    Returns:
        ``(expiration_us, correlation_id, key text, offset of the payload)``.
    Raises:
        CorruptRecordError: the key text is not UTF-8 (a record no sowlib writes).
    """
    pos = offset + RECORD_HEADER_SIZE
    exp = 0
    if kind_byte & FLAG_EXPIRATION:
        exp = EXPIRATION.unpack_from(buf, pos)[0]
        pos += EXPIRATION.size
    corr = b""
    if kind_byte & FLAG_CORRELATION:
        c = CORR_LEN.unpack_from(buf, pos)[0]
        pos += CORR_LEN.size
        corr = bytes(buf[pos : pos + c])
        pos += c
    if kind_byte & FLAG_U64_KEY:
        key = str(U64.unpack_from(buf, pos)[0])
    else:
        try:
            key = bytes(buf[pos : pos + key_len]).decode()
        except UnicodeDecodeError:
            raise CorruptRecordError(file, offset, "key is not UTF-8") from None
    return exp, corr, key, pos + key_len


def decode_record(buf: Buf, offset: int, limit: int, file: str = "") -> LogRecord:
    """Decode and verify the record at ``offset``; O(record size).

    Raises:
        CorruptRecordError: no intact record starts at ``offset``.
    """
    problem = record_problem(buf, offset, limit)
    if problem is not None:
        raise CorruptRecordError(file, offset, problem)
    return decode_intact(buf, offset, file)


def decode_intact(buf: Buf, offset: int, file: str = "") -> LogRecord:
    """:func:`decode_record` of a record :func:`record_problem` found intact (not checked
    again); O(record size).

    Raises:
        CorruptRecordError: the key text is not UTF-8 (a record no sowlib writes).
    """
    (_len, _m, kind_byte, key_len, p, seq, ts) = RECORD_HEADER.unpack_from(buf, offset)
    exp, corr, key, pos = decode_fields(buf, offset, kind_byte, key_len, file)
    kind_member = KINDS[kind_byte & KIND_MASK]
    assert kind_member is not None
    return LogRecord(
        offset,
        kind_member,
        seq,
        ts / 1_000_000,
        exp / 1_000_000,
        key,
        corr,
        bytes(buf[pos : pos + p]),
    )


def encode_commit(counter: int, end: int) -> bytes:
    """Return one commit slot: ``counter``, the committed ``end`` and their check; O(1)."""
    body = _COMMIT_BODY.pack(counter, end)
    return body + CHECKSUM.pack(_hash(body, _COMMIT_SEED))


def commit_slot_offset(commit_at: int, counter: int) -> int:
    """Where the commit with ``counter`` is written (slots alternate by counter)."""
    return commit_at + COMMIT_SLOT.size * (counter % COMMIT_SLOTS)


def read_commit(buf: Buf, commit_at: int) -> tuple[int, int]:
    """Return ``(counter, end)`` of the newest valid commit slot, or ``(0, 0)``; O(1)."""
    best = (0, 0)
    for slot in range(COMMIT_SLOTS):
        at = commit_at + slot * COMMIT_SLOT.size
        counter, end, check = COMMIT_SLOT.unpack_from(buf, at)
        if check == _hash(buf[at : at + _COMMIT_BODY.size], _COMMIT_SEED) and counter > best[0]:
            best = (counter, end)
    return best


def _header_sizes(meta_len: int) -> tuple[int, int]:
    """``(commit_at, header_len)`` of a header carrying ``meta_len`` bytes of meta."""
    commit_at = _align(FILE_HEADER.size + meta_len + CHECKSUM.size)
    return commit_at, commit_at + COMMIT_SLOTS * COMMIT_SLOT.size


def encode_header(
    generation: int, created: float, base_seq: int, meta: bytes, committed: int = 0
) -> bytes:
    """Return the file header bytes (commit slots included); O(len(meta)).

    Args:
        generation: the file's generation.
        created: creation time, seconds since the epoch.
        base_seq: highest sequence number ever assigned.
        meta: opaque topic configuration.
        committed: end of the records the new file holds complete (a compaction's or a
            repair's whole content); 0 means the header's end (no records yet).
    """
    if len(meta) > MAX_META:
        raise ValueError(f"meta of {len(meta)} bytes exceeds {MAX_META}")
    commit_at, header_len = _header_sizes(len(meta))
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
    body += bytes(commit_at - len(body))
    slots = [bytes(COMMIT_SLOT.size)] * COMMIT_SLOTS
    slots[1 % COMMIT_SLOTS] = encode_commit(1, committed or header_len)
    body += b"".join(slots)
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
        hint = _OLD_VERSION_HINT if version == 2 else ""
        raise FormatVersionError(file, version, FORMAT_VERSION, hint)
    end = FILE_HEADER.size + meta_len
    commit_at, expected_len = _header_sizes(meta_len)
    if meta_len > MAX_META or expected_len > size or header_len != expected_len:
        raise CorruptRecordError(file, 0, "bad header sizes")
    if _hash(buf[:end]) != CHECKSUM.unpack_from(buf, end)[0]:
        raise CorruptRecordError(file, 0, "header checksum mismatch")
    meta = bytes(buf[FILE_HEADER.size : end])
    counter, committed = read_commit(buf, commit_at)
    return FileHeader(
        version,
        flags,
        header_len,
        generation,
        from_micros(created_us),
        base_seq,
        meta,
        commit_at,
        committed if counter else header_len,
        counter,
    )
