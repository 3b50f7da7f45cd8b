"""A topic's per-key entry and the loops that build its key map: checkpoint, replay.

Imports only ``storage`` record kinds, ``msgpack`` and the standard library;
never ``topic``, ``query`` or ``expr``.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Final, cast

import msgpack

from sowlib.storage import RecordKind

__all__ = [
    "BODY",
    "CORR",
    "EXPIRES",
    "OFFSET",
    "SEQ",
    "SIZE",
    "STAMP",
    "Entry",
    "Slot",
    "checkpoint_blob",
    "entries_from_checkpoint",
    "replay_entries",
]

_PUT = RecordKind.PUT


Entry = tuple[int, int, float, float, bytes, int, "bool | bytes"]
"""Where the live version of a key sits in the log, and its header fields.

``(offset, seq, timestamp, expiration, correlation_id, size, body)``, read with
the index constants below. ``size`` is the bytes the record occupies in the log;
``body`` is the payload itself when this process published it (reads never touch
the file), True when it is only in the log and its checksum has been verified,
False when its checksum has not been checked yet (the first read goes through
the checked path).

A plain tuple, not a named tuple: CPython's cyclic collector stops tracking an
exact tuple that holds only atomic values, so a key map of millions of entries
adds nothing to a full collection (a named tuple is a class instance, tracked
for good, and a big cache made every full collection walk all of it).
"""

OFFSET: Final = 0
SEQ: Final = 1
STAMP: Final = 2
EXPIRES: Final = 3
CORR: Final = 4
SIZE: Final = 5
BODY: Final = 6


#: A key map value: the entry, or the offset of a record loaded from a checkpoint
#: and not read since (its header fields are read from the log on first use).
Slot = Entry | int

# The blob's layout version (the first item of the msgpack list).
_BLOB_VERSION = 2
# Offsets are stored as little-endian i64 whatever the machine's byte order.
_SWAP = sys.byteorder != "little"


def _little_endian(column: array.array[int]) -> bytes:
    if _SWAP:
        column = array.array("q", column)
        column.byteswap()
    return column.tobytes()


def entries_from_checkpoint(blob: bytes) -> tuple[dict[str, Slot], int] | None:
    """The key map a clean close saved, and its live bytes; O(records), C-level loops.

    Records without an expiration come back as bare offsets (one int per key is
    what makes a reopen of millions of records fast: no tuple and no header
    fields per record); the rest as unverified entries (``body=False``). The
    first read of either checks the record. None when the blob has another layout.
    """
    try:
        version, keys, offsets, live, full = msgpack.unpackb(blob)
        if version != _BLOB_VERSION:
            return None
        column = array.array("q")
        column.frombytes(offsets)
        if _SWAP:
            column.byteswap()
        slots: dict[str, Slot] = dict(zip(keys, column.tolist(), strict=True))
        f_keys, f_offsets, seqs, stamps, exps, corrs, sizes = full
        rows = zip(f_offsets, seqs, stamps, exps, corrs, sizes, repeat(False))
        slots.update(zip(f_keys, cast("Iterable[Entry]", rows), strict=True))
        return slots, int(live)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None  # not this layout: the caller replays the log


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
        elif slot[EXPIRES] > 0:
            add_full((key, slot))
        else:
            add_key(key)
            add_offset(slot[OFFSET])
    blob: bytes = msgpack.packb(
        [
            _BLOB_VERSION,
            keys,
            _little_endian(offsets),
            live_bytes,
            [
                [k for k, _ in full],
                [e[OFFSET] for _, e in full],
                [e[SEQ] for _, e in full],
                [e[STAMP] for _, e in full],
                [e[EXPIRES] for _, e in full],
                [e[CORR] for _, e in full],
                [e[SIZE] for _, e in full],
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
            live -= size_at(old) if isinstance(old, int) else old[SIZE]
        if kind == _PUT:
            # ``size`` is the bytes the record occupies in the log. A record
            # without expiration or correlation id is kept as its bare offset, as
            # a checkpoint load does: no tuple per record (its header fields are
            # read again when the key is first touched, and its checksum, which
            # recovery verified, when its payload is first read).
            if expires or corr:
                entries[key] = (offset, seq, stamp, expires, corr, size, True)
            else:
                entries[key] = offset
            live += size
        elif old is not None:
            pop(key)
    return live
