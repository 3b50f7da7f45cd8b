"""A topic's per-key entry and the loops that build its key map: checkpoint, replay.

Imports only ``storage`` record kinds, ``msgpack`` and the standard library;
never ``topic``, ``query`` or ``expr``.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable
from functools import partial
from itertools import repeat
from typing import NamedTuple

import msgpack

from sowlib.storage import RecordKind

__all__ = [
    "Entry",
    "Slot",
    "checkpoint_blob",
    "entries_from_checkpoint",
    "new_entry",
    "replay_entries",
]

_PUT = RecordKind.PUT


class Entry(NamedTuple):
    """Where the live version of a key sits in the log, and its header fields.

    A tuple: a reopen builds one per record straight from the checkpoint
    columns with C-level calls, and replacing one costs less than mutating.
    """

    offset: int
    seq: int
    timestamp: float
    expiration: float
    corr: bytes
    size: int
    # The payload itself when this process published it (reads never touch the
    # file); True when it is only in the log and its checksum has been verified
    # (replayed at open); False when loaded from a checkpoint and not verified
    # yet, so the first read goes through the checked path.
    body: bool | bytes = True


#: ``new_entry((offset, seq, ...))``: an Entry without the keyword-argument machinery.
new_entry = partial(tuple.__new__, Entry)


#: A key map value: the entry, or the offset of a record loaded from a checkpoint
#: and not read since (its header fields are read from the log on first use).
Slot = Entry | int

# The blob's layout version (the first item of the msgpack list).
_BLOB_VERSION = 2


def entries_from_checkpoint(blob: bytes) -> tuple[dict[str, Slot], int] | None:
    """The key map a clean close saved, and its live bytes; O(records), C-level loops.

    Records without an expiration come back as bare offsets (one int per key is
    what makes a reopen of millions of records fast: no tuple and no header
    fields per record); the rest as unverified entries (``body=False``). The
    first read of either checks the record. None when the blob has another layout.
    """
    try:
        version, keys, offsets, live, full = msgpack.unpackb(blob)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if version != _BLOB_VERSION:
        return None
    column = array.array("q")
    column.frombytes(offsets)
    slots: dict[str, Slot] = dict(zip(keys, column.tolist(), strict=True))
    f_keys, f_offsets, seqs, stamps, exps, corrs, sizes = full
    rows = zip(f_offsets, seqs, stamps, exps, corrs, sizes, repeat(False))
    slots.update(zip(f_keys, map(new_entry, rows), strict=True))
    return slots, int(live)


def checkpoint_blob(entries: dict[str, Slot], live_bytes: int) -> bytes:
    """The layout :func:`entries_from_checkpoint` reads back; O(records).

    Keys whose record has no expiration are stored as (key, offset) only: a
    reopen reads their other header fields from the log when it first needs
    them. Records with an expiration keep every field, so a reopen can rebuild
    the expiration queue without reading the log.
    """
    keys: list[str] = []
    offsets = array.array("q")
    full: list[tuple[str, Entry]] = []
    add_key, add_offset, add_full = keys.append, offsets.append, full.append
    for key, slot in entries.items():
        if isinstance(slot, int):
            add_key(key)
            add_offset(slot)
        elif slot.expiration > 0:
            add_full((key, slot))
        else:
            add_key(key)
            add_offset(slot.offset)
    blob: bytes = msgpack.packb(
        [
            _BLOB_VERSION,
            keys,
            offsets.tobytes(),
            live_bytes,
            [
                [k for k, _ in full],
                [e.offset for _, e in full],
                [e.seq for _, e in full],
                [e.timestamp for _, e in full],
                [e.expiration for _, e in full],
                [e.corr for _, e in full],
                [e.size for _, e in full],
            ],
        ]
    )
    return blob


def replay_entries(
    entries: dict[str, Slot],
    scan: Iterable[tuple[int, RecordKind, int, float, float, str, bytes, int]],
    size_at: Callable[[int], int],
) -> int:
    """Apply ``scan_entries`` tuples to ``entries`` (the tight loop of recovery).

    Args:
        entries: the key map.
        scan: what ``scan_entries`` yields.
        size_at: the framed size of the record at an offset (for bare-offset slots).

    Returns:
        The change in live bytes.
    """
    get, pop = entries.get, entries.pop
    live = 0
    for offset, kind, seq, stamp, expires, key, corr, size in scan:
        old = get(key)
        if old is not None:
            live -= size_at(old) if isinstance(old, int) else old.size
        if kind == _PUT:
            # ``size`` is the bytes the record occupies in the log. A record
            # without expiration or correlation id is kept as its bare offset, as
            # a checkpoint load does: no tuple per record (its header fields are
            # read again when the key is first touched, and its checksum, which
            # recovery verified, when its payload is first read).
            if expires or corr:
                entries[key] = new_entry((offset, seq, stamp, expires, corr, size, True))
            else:
                entries[key] = offset
            live += size
        elif old is not None:
            pop(key)
    return live
