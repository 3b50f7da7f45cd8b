"""The clean-close checkpoint side file ``<log>.ckpt``: validated read and atomic write.

A checkpoint lets the topic layer restore its in-memory state from one blob and replay only
the records after ``end_offset``. Imports only sibling storage modules.
"""

from __future__ import annotations

import os

from sowlib.storage.compaction import write_all
from sowlib.storage.format import (
    PREFIX,
    RECORD_HEADER,
    Buf,
    Checkpoint,
    FileHeader,
    decode_checkpoint,
    encode_checkpoint,
    record_problem,
)
from sowlib.storage.fs import FileSystem

__all__ = ["read_checkpoint", "write_checkpoint"]


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
    """
    name = path + ".ckpt"
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    if consume:
        fs.unlink(name)
    ckpt = decode_checkpoint(data)
    if ckpt is None or ckpt.generation != header.generation:
        return None
    end, last = ckpt.end_offset, ckpt.last_record_offset
    if not header.header_len <= end <= size or (ckpt.records == 0) != (last == 0):
        return None
    if not last:
        return ckpt if end == header.header_len else None
    if last < header.header_len or record_problem(buf, last, end) is not None:
        return None
    if last + PREFIX.unpack_from(buf, last)[1] != end:
        return None
    return ckpt if RECORD_HEADER.unpack_from(buf, last)[8] <= ckpt.last_seq else None


def write_checkpoint(fs: FileSystem, path: str, ckpt: Checkpoint) -> None:
    """Write ``path + ".ckpt"`` atomically (temp file, fsync, rename, directory fsync).

    Raises:
        OSError: a step failed; an older side file, if any, is untouched.
    """
    tmp, name = path + ".ckpt.tmp", path + ".ckpt"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, encode_checkpoint(ckpt))
        fs.fsync(fd)
    finally:
        os.close(fd)
    fs.rename(tmp, name)
    fs.fsync_dir(os.path.dirname(path))
