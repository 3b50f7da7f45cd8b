"""The journal's framing: one entry or mark as bytes, and back.

Imports only ``errors``. A segment file is an 8-byte magic, then frames
``length | crc32 | seq | time | kind | expiration | 5 length-prefixed fields``;
the crc covers every byte of the frame after itself. Kinds 0-2 are entries
(publish, delete, expire); kind 3 is a commit mark and kind 4 a seal, whose data
field is ``offset: u64 | crc32: u32``: where the mark starts and the crc32 of
every byte of the file before it.
"""

from __future__ import annotations

import math
import mmap
import struct
import zlib

import attrs

__all__ = [
    "COMMIT",
    "KINDS",
    "MARK_SIZE",
    "MAGIC",
    "MAGIC_V1",
    "SEAL",
    "Entry",
    "Mark",
    "decode",
    "encode",
    "encode_mark",
    "incomplete",
]

MAGIC_V1 = b"SOWJRN01"
"""Format 1: entries only (no commit marks, no seals, no state file)."""
MAGIC = b"SOWJRN02"
"""Format 2, written by this version."""
KINDS = ("publish", "delete", "expire")
COMMIT = "commit"
SEAL = "seal"
_MARKS = (COMMIT, SEAL)
_HEAD = struct.Struct("<IIQdBd")  # length, crc, seq, time, kind, expiration (NaN: none)
_LEN = struct.Struct("<I")
_MARK = struct.Struct("<QI")


@attrs.frozen
class Entry:
    """One journalled change: a publish (the stored or delivered message) or a removal."""

    seq: int
    timestamp: float
    kind: str
    topic: str
    message_type: str
    data: bytes
    sow_key: str = ""
    correlation_id: bytes = b""
    expiration: float | None = None


@attrs.frozen
class Mark:
    """A commit mark or a seal: everything before ``offset`` is complete (crc ``crc``);
    ``seq`` and ``timestamp`` are those of the last entry before it (0 when none)."""

    kind: str
    seq: int
    timestamp: float
    offset: int
    crc: int


def _frame(
    seq: int, stamp: float, kind: int, expiration: float, fields: tuple[bytes, ...]
) -> bytes:
    body = b"".join(_LEN.pack(len(f)) + f for f in fields)
    rest = _HEAD.pack(0, 0, seq, stamp, kind, expiration)[8:]
    payload = rest + body
    return _LEN.pack(len(payload) + 8) + _LEN.pack(zlib.crc32(payload)) + payload


def encode(entry: Entry) -> bytes:
    """The frame of ``entry``."""
    fields = (
        entry.topic.encode(),
        entry.message_type.encode(),
        entry.sow_key.encode(),
        entry.correlation_id,
        entry.data,
    )
    expiration = math.nan if entry.expiration is None else entry.expiration
    return _frame(entry.seq, entry.timestamp, KINDS.index(entry.kind), expiration, fields)


def encode_mark(kind: str, seq: int, stamp: float, offset: int, crc: int) -> bytes:
    """The frame of a commit mark or seal written at ``offset`` after bytes of crc ``crc``."""
    code = len(KINDS) + _MARKS.index(kind)
    return _frame(seq, stamp, code, math.nan, (b"", b"", b"", b"", _MARK.pack(offset, crc)))


def decode(
    buf: bytes | memoryview | mmap.mmap, offset: int, version: int = 2, base: int = 0
) -> tuple[Entry | Mark, int] | None:
    """The entry or mark at ``offset`` and the next offset, or None if it is short or bad.

    Format 1 (``version=1``) has no marks. A mark whose own ``offset`` is not where it
    stands (``base``: the file position of ``buf[0]``) is bad.
    """
    if offset + _HEAD.size > len(buf):
        return None
    length, crc, seq, stamp, kind, expiration = _HEAD.unpack_from(buf, offset)
    end = offset + length
    if length < _HEAD.size or end > len(buf) or zlib.crc32(buf[offset + 8 : end]) != crc:
        return None
    kinds = len(KINDS) + (len(_MARKS) if version >= 2 else 0)
    if kind >= kinds:
        return None
    fields, pos = [], offset + _HEAD.size
    for _ in range(5):
        if pos + 4 > end:
            return None
        (size,) = _LEN.unpack_from(buf, pos)
        fields.append(bytes(buf[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    if pos != end:
        return None
    topic, mtype, key, corr, data = fields
    if kind >= len(KINDS):
        if len(data) != _MARK.size:
            return None
        at, check = _MARK.unpack(data)
        if at != base + offset:
            return None
        return Mark(_MARKS[kind - len(KINDS)], seq, stamp, at, check), end
    try:
        entry = Entry(
            seq,
            stamp,
            KINDS[kind],
            topic.decode(),
            mtype.decode(),
            data,
            key.decode(),
            corr,
            None if math.isnan(expiration) else expiration,
        )
    except UnicodeDecodeError:
        return None
    return entry, end


def incomplete(buf: bytes | memoryview | mmap.mmap, offset: int) -> bool:
    """Whether the bad frame at ``offset`` reaches the end of ``buf`` (a torn or
    in-progress write) rather than being a damaged frame with more data after it."""
    if offset + _HEAD.size > len(buf):
        return True
    length: int = _LEN.unpack_from(buf, offset)[0]
    return offset + length >= len(buf)


MARK_SIZE = len(encode_mark(COMMIT, 0, 0.0, 0, 0))
"""Every mark has this many bytes (a sealed segment ends with one)."""
