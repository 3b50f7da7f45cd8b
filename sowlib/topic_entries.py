"""A topic's per-key entry and the loops that build its key map: checkpoint, replay.

Imports only ``storage`` record kinds, ``msgpack`` and the standard library;
never ``topic``, ``query`` or ``expr``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from itertools import repeat
from typing import NamedTuple

import msgpack

from sowlib.storage import RecordKind

__all__ = [
    "Entry",
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


def entries_from_checkpoint(blob: bytes) -> tuple[dict[str, Entry], int]:
    """The key map a clean close saved, and its live bytes; O(records), C-level loops.

    Entries come back unverified (``body=False``): the first read checks the record.
    """
    keys, offsets, seqs, stamps, exps, corrs, sizes = msgpack.unpackb(blob)
    columns = zip(offsets, seqs, stamps, exps, corrs, sizes, repeat(False))
    return dict(zip(keys, map(new_entry, columns), strict=True)), sum(sizes)


def checkpoint_blob(entries: dict[str, Entry]) -> bytes:
    """The columns :func:`entries_from_checkpoint` reads back; O(records)."""
    items = list(entries.items())
    blob: bytes = msgpack.packb(
        [
            [k for k, _ in items],
            [e.offset for _, e in items],
            [e.seq for _, e in items],
            [e.timestamp for _, e in items],
            [e.expiration for _, e in items],
            [e.corr for _, e in items],
            [e.size for _, e in items],
        ]
    )
    return blob


def replay_entries(
    entries: dict[str, Entry],
    scan: Iterable[tuple[int, RecordKind, int, float, float, str, bytes, int]],
) -> int:
    """Apply ``scan_entries`` tuples to ``entries`` (the tight loop of recovery).

    Returns:
        The change in live bytes.
    """
    get, pop = entries.get, entries.pop
    live = 0
    for offset, kind, seq, stamp, expires, key, corr, size in scan:
        old = get(key)
        if old is not None:
            live -= old[5]
        if kind == _PUT:
            # Recovery verified every record's checksum when the log opened;
            # ``size`` is the bytes the record occupies in the log.
            entries[key] = new_entry((offset, seq, stamp, expires, corr, size, True))
            live += size
        elif old is not None:
            pop(key)
    return live
