"""A read-only topic continuing across the writer's compaction with the state it holds.

A compaction copies each live record as it was (same key, payload and sequence number)
into a new file, in file order, and renames it over the old one. A reader that followed
the old file up to sequence number ``applied`` already holds every copied record whose
sequence number is at most ``applied``: only their offsets change. So instead of loading
the new file (a walk, the key map and every index rebuilt: seconds at millions of
records) the reader points those keys at their copies, applies the records after them
as a refresh applies appends, and forgets the keys the new file no longer holds. The
result equals a load of the new file (``tests/test_refresh_batch.py``).

Imports ``storage``, ``index`` and sibling modules; never the facade.
"""

from __future__ import annotations

from bisect import bisect_left

from sowlib.gcpause import paused_gc
from sowlib.index.types import Key
from sowlib.storage import AppendLog, EntryList, Log
from sowlib.topic.parts import Parts
from sowlib.topic.writer import Writer

__all__ = ["Carried", "carried_rows", "carry_over", "continue_on", "move_held"]

#: What :func:`carried_rows` found: the number of leading records that are copies of
#: versions the reader holds, and their keys in file order.
Carried = tuple[int, list[Key]]


def continue_on(parts: Parts, old: Log, new: Log) -> bool:
    """Continue a read-only topic's ``parts`` on ``new`` (a log just opened on the file
    that replaced ``old``'s, with the same configuration), keeping the state they hold:
    True when done (``old`` now reads the new file, ``new`` is closed); False, nothing
    changed but the key map of ``parts``, when the file is not a compacted copy of what
    the topic followed or subscribers must be told what changed: the caller then loads
    the topic from ``new`` into new parts and drops these."""
    if not (isinstance(old, AppendLog) and isinstance(new, AppendLog)) or parts.subs.active:
        return False
    entries = new.scan_columns()
    carried = carried_rows(parts.writer, entries, old.last_seq)
    if carried is None or not move_held(parts.writer, entries, carried):
        return False
    old.adopt(new)
    carry_over(parts.writer, entries, carried)
    return True


def carried_rows(writer: Writer, entries: EntryList, applied: int) -> Carried | None:
    """How many of ``entries`` (every record of the file that replaced this reader's, as
    the log walks it) are versions the reader holds: the records up to sequence number
    ``applied`` (the last one it applied), with their keys.

    None when the state cannot carry over: a history, an expiring topic, a record other
    than a common PUT among them; then the topic is loaded from the new file. Whether
    the reader holds every key, once (a key twice is not a compaction's copy), is found
    by :func:`move_held`, which probes the key table anyway. Makes the kept index
    values known first (they may have to be read from the old file). O(log records) to
    find the rows, O(rows) to list their keys.
    """
    if writer.history is not None or writer.expiry.enabled:
        return None
    lo, hi = 0, len(entries)
    while lo < hi:  # the first record past ``applied`` (sequence numbers ascend)
        mid = (lo + hi) // 2
        if entries.seq_at(mid) <= applied:
            lo = mid + 1
        else:
            hi = mid
    if any(row < lo for row in entries.others):
        return None
    head = writer.keys_of_words(entries.words[:lo])
    writer.indexes.ensure_values()
    return lo, head


def move_held(writer: Writer, entries: EntryList, carried: Carried) -> bool:
    """Point the keys of the leading records (``carried``, from :func:`carried_rows`)
    at their copies in ``entries``, in one pass over the key map's table of entries (a
    copy has the size of the version held: the table of sizes is not touched): True when
    the reader held every one of them at offsets ascending in file order, as a
    compaction copies them (so no key came twice; their values are unchanged, so are
    the indexes).

    False when not, so the file is not a compaction's copy of what the reader followed:
    the key map has been changed then, and the caller must drop it with the rest of the
    topic's parts (:func:`continue_on` says False and the topic is loaded from the new
    file). One probe per key and table (a separate membership pass was a third of a
    carry-over at 1,000,000 records, a set of the keys to find one twice another
    quarter).
    """
    rows, head = carried
    with paused_gc():
        return writer.keys.repoint(head, entries.offsets[:rows].tolist())


def carry_over(writer: Writer, entries: EntryList, carried: Carried) -> None:
    """Continue on the new file, whose log now holds ``entries`` (``carried`` from
    :func:`carried_rows`, the keys of its leading records already moved to their copies
    by :func:`move_held`): the records after them are applied as a refresh applies
    them, and a key the file does not hold is forgotten (it was deleted meanwhile).

    Every key held outside the leading records must be one the later records name, or
    it is forgotten: counted over the later records' keys, before they are applied
    (:func:`_named_outside`), with no set of every key unless some are to be forgotten.
    O(records), the applied ones with their index upkeep."""
    rows, head = carried
    keys = writer.keys
    with paused_gc():
        tail = entries.rows_from(rows)
        others, words = tail.others, tail.words
        named = [keys.key_of(entry[5]) for entry in others.values()]
        if others:
            words = [word for row, word in enumerate(words) if row not in others]
        named += writer.keys_of_words(words)
        whole = _named_outside(writer, entries, carried, named) == len(keys) - rows
        writer.apply_entries(tail)
        if whole:
            return  # every key held is in the file (or taken out by a later record)
        held = set(head)
        held.update(named)
        for key in [key for key in keys if key not in held]:
            writer.forget(key)


def _named_outside(writer: Writer, entries: EntryList, carried: Carried, named: list[Key]) -> int:
    """How many keys of ``named`` the reader holds that are not among the leading
    records' (whose keys point at their copies now): a key points at a leading record
    exactly when that record, found by its offset, has the key. O(len(named) log rows)."""
    rows, head = carried
    offsets = entries.offsets
    offset_of = writer.keys.offset
    count = 0
    for key in set(named):
        at = offset_of(key)
        if at is None:
            continue  # not held: new to the reader
        row = bisect_left(offsets, at, 0, rows)
        if not (row < rows and offsets[row] == at and head[row] == key):
            count += 1
    return count
