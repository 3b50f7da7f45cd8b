"""The clean-close checkpoint side file ``<log>.ckpt``: its layout, validated read, atomic write.

A checkpoint lets the topic layer restore its in-memory state from one blob and replay only
the records after ``end_offset``. Imports only sibling storage modules.
"""

from __future__ import annotations

import contextlib
import os
import struct
from typing import BinaryIO

import attrs
import xxhash

from sowlib.errors import CorruptRecordError
from sowlib.storage.compaction import write_all
from sowlib.storage.format import (
    CHECKSUM,
    FORMAT_VERSION,
    PREFIX,
    RECORD_HEADER,
    Buf,
    FileHeader,
    record_problem,
)
from sowlib.storage.fs import FileSystem, create_exclusive, open_regular, os_errors

__all__ = [
    "CHECKPOINT_MAGIC",
    "Checkpoint",
    "decode_checkpoint",
    "encode_checkpoint",
    "read_checkpoint",
    "write_checkpoint",
]

CHECKPOINT_MAGIC = b"SOWCKPT\x01"
"""First eight bytes of a ``<log>.ckpt`` side file."""
# magic, version, reserved, reserved, generation, end_offset, records, last_seq,
# last_record_offset, blob_len -- 64 bytes; blob follows, then an xxh3_64 checksum.
CHECKPOINT_HEADER = struct.Struct("<8sHHIQQQQQQ")
MAX_CHECKPOINT = 1 << 34
"""Largest side file read (a longer one cannot be a checkpoint this sowlib wrote)."""
CHECKPOINT_PER_LOG_BYTE = 64
"""A checkpoint holds per record a key, an offset and a few u32 positions per index and
the index values (copies of record bytes): in practice under 1.5 bytes per byte of the
log (30 hash and 30 memo indexes over 60-byte records). One larger than this many bytes
per log byte, plus :data:`CHECKPOINT_SLACK`, was not written for this log and is refused
before a byte of it is read."""
CHECKPOINT_SLACK = 1 << 26
_hash = xxhash.xxh3_64_intdigest


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
    if _hash(memoryview(data)[:stop]) != CHECKSUM.unpack_from(data, stop)[0]:
        return None
    return Checkpoint(gen, end, records, last_seq, last_off, data[CHECKPOINT_HEADER.size : stop])


def _read_side_file(fh: BinaryIO, length: int) -> Checkpoint | None:
    """:func:`decode_checkpoint` of a side file of ``length`` bytes, read part by part:
    the blob is read into its own bytes, not copied out of the whole file's."""
    head = fh.read(CHECKPOINT_HEADER.size)
    if len(head) != CHECKPOINT_HEADER.size:
        return None
    (magic, version, _r1, _r2, gen, end, records, last_seq, last_off, blob_len) = (
        CHECKPOINT_HEADER.unpack(head)
    )
    if magic != CHECKPOINT_MAGIC or version != FORMAT_VERSION:
        return None
    if CHECKPOINT_HEADER.size + blob_len + CHECKSUM.size != length:
        return None
    blob = fh.read(blob_len)
    tail = fh.read(CHECKSUM.size + 1)  # one more byte: a file grown since is refused
    if len(blob) != blob_len or len(tail) != CHECKSUM.size:
        return None
    digest = xxhash.xxh3_64(head)
    digest.update(blob)
    if digest.intdigest() != CHECKSUM.unpack(tail)[0]:
        return None
    return Checkpoint(gen, end, records, last_seq, last_off, blob)


def read_checkpoint(
    fs: FileSystem, path: str, buf: Buf, size: int, header: FileHeader, consume: bool
) -> Checkpoint | None:
    """Return the checkpoint of ``path`` if it matches the open log; O(len(blob)).

    It must carry the log's generation, and its last record must be intact and end exactly
    at ``end_offset`` (so a checkpoint from another file or a damaged one is ignored).

    Args:
        fs: where the unlink goes.
        path: the log file (the side file is ``path + ".ckpt"``).
        buf: the mapped log.
        size: mapped size.
        header: the log's decoded header.
        consume: delete the side file after reading it (a writer does: once it appends,
            a crash must lead to a full scan, not to a stale checkpoint).
    Raises:
        CorruptRecordError: the side file is larger than any checkpoint of a log of
            ``size`` bytes (see :data:`CHECKPOINT_PER_LOG_BYTE`); nothing of it is read.
    """
    name = path + ".ckpt"
    ckpt = None
    try:
        # Missing, unreadable, a planted symlink, FIFO or device: no checkpoint (the log
        # is scanned); open_regular never blocks on a FIFO nor reads from a device.
        fd = open_regular(name, os.O_RDONLY, "read the checkpoint")
    except OSError:
        fd = -1
    if fd >= 0:
        with os.fdopen(fd, "rb") as fh:
            length = os.fstat(fh.fileno()).st_size
            limit = min(MAX_CHECKPOINT, CHECKPOINT_SLACK + CHECKPOINT_PER_LOG_BYTE * size)
            if length > limit:
                reason = (
                    f"checkpoint of {length} bytes is larger than a log of {size} bytes"
                    f" can need (at most {limit}); remove the file to open the store"
                )
                raise CorruptRecordError(name, 0, reason)
            with contextlib.suppress(OSError):
                ckpt = _read_side_file(fh, length)
    if consume:
        with os_errors(name, "remove"), contextlib.suppress(FileNotFoundError):
            fs.unlink(name)
    if ckpt is None or ckpt.generation != header.generation:
        return None
    end, last = ckpt.end_offset, ckpt.last_record_offset
    if not header.header_len <= end <= size or (ckpt.records == 0) != (last == 0):
        return None
    if not last:
        return ckpt if end == header.header_len else None
    if last < header.header_len or record_problem(buf, last, end) is not None:
        return None
    if last + PREFIX.unpack_from(buf, last)[0] != end:
        return None
    return ckpt if RECORD_HEADER.unpack_from(buf, last)[5] <= ckpt.last_seq else None


def write_checkpoint(fs: FileSystem, path: str, ckpt: Checkpoint) -> None:
    """Write ``path + ".ckpt"`` atomically (temp file, fsync, rename, directory fsync).

    The temp file is created afresh (``O_EXCL | O_NOFOLLOW``, a leftover or a planted symlink
    is removed first), so nothing is ever written through a symlink; the rename replaces a
    symlink ``<log>.ckpt`` itself.

    Raises:
        StoreFullError: no room for the side file (the temp file is removed).
        StorePathError: another step failed; an older side file, if any, is untouched.
    """
    tmp, name = path + ".ckpt.tmp", path + ".ckpt"
    data = encode_checkpoint(ckpt)
    fd = create_exclusive(tmp)
    try:
        with os_errors(tmp, "write", len(data)):
            try:
                write_all(fd, data, fs)
                fs.fsync(fd)
            finally:
                os.close(fd)
            fs.rename(tmp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with os_errors(os.path.dirname(path), "fsync the directory"):
        fs.fsync_dir(os.path.dirname(path))
