"""The recovery walk of an open, and the entries it keeps as columns.

``verify_columns`` checks every record from a boundary as ``walk.verify_entries_by_record``
(its reference) does, and stops where it stops. It keeps no tuple per record: the
common record (a PUT with a u64 key, no expiration, no correlation id) leaves its offset
and its key in two columns, read back from the bytes if the entries are iterated; any
other record is checked on its own, as the reference checks it, and kept whole.
The run of common records is walked by the C form of :func:`common_run` where it was
built (``storage.native``). :func:`tail_run` is a read-only refresh's common case (a
run of common records, then nothing written yet) in one call, as lists ready for the
key map and the index set. Imports only ``sowlib.storage.format`` and
``sowlib.storage.native``.
"""

from __future__ import annotations

import array
import struct
from collections.abc import Callable, Iterator
from itertools import islice
from operator import sub

import xxhash

from sowlib.storage.format import (
    FLAG_RESERVED,
    FLAG_U64_KEY,
    HEAD_U64,
    KIND_MASK,
    KINDS,
    RECORD_MARKER,
    RECORD_OVERHEAD,
    U64,
    Buf,
    LogRecord,
    RecordKind,
    decode_fields,
    decode_intact,
    expected_length,
)
from sowlib.storage.native import NATIVE_COMMON_RUN, optional_module

__all__ = ["NATIVE_TAIL_RUN", "EntryList", "PlainRun", "ScanEntry", "common_run", "tail_run"]
__all__ += ["verify_columns"]

ScanEntry = tuple[int, RecordKind, int, float, float, str, bytes, int]
"""What ``AppendLog.scan_entries`` yields: a LogRecord's fields with the framed size last."""

_PUT = RecordKind.PUT
_FAST_OVERHEAD = RECORD_OVERHEAD + U64.size  # a PUT with only a u64 key
# Length, then marker | kind byte | key length as one u32 (the common record's bytes 4..8
# are always the same), payload length, and (past seq and timestamp) the u64 key.
_COMMON = struct.Struct("<III16xQ")
_COMMON_TAG = int.from_bytes(bytes([RECORD_MARKER, int(_PUT) | FLAG_U64_KEY, 8, 0]), "little")
# seq, timestamp and u64 key of a common record, at _TAIL_AT.
_TAIL = struct.Struct("<QqQ")
_TAIL_AT = 12
_LENGTH = struct.Struct("<I")

_RUN_EPOCH = object()

PlainRun = tuple[int, list[int], list[int], list[int], int, list[bytes]]
"""What :func:`tail_run` gives: the end of the run, then the offsets, u64 keys, framed
sizes, the last record's seq, and the payloads."""


class EntryList:
    """What ``scan_entries`` yields for a run of records back to back, a column per field.

    Every record is a row of ``offsets``, and of ``words``: a record in the common form
    (a PUT with a u64 key, no expiration, no correlation id) has its u64 key there, and
    the rest of its entry is read back from ``buf`` when iterated; any other record's
    entry is kept whole in ``others`` under its row (its word is 0). Iterating yields the
    entry tuples in file order, and stops once the list is cleared (the log clears it
    when it is closed or compacted).

    Args:
        buf: the bytes the records were verified in (kept until cleared).
    """

    __slots__ = ("__weakref__", "_epoch", "buf", "end", "offsets", "others", "plain", "words")

    def __init__(self, buf: Buf = b"") -> None:
        self.buf = buf
        #: Set by :meth:`of_run` only: the run as :func:`tail_run` gave it (every row a
        #: common record), which the caller may take instead of the columns.
        self.plain: PlainRun | None = None
        self.offsets: array.array[int] = array.array("q")
        self.words: list[int] = []
        self.others: dict[int, ScanEntry] = {}
        #: Where the last record ends.
        self.end = 0
        self._epoch = object()

    @classmethod
    def of_run(cls, buf: Buf, run: PlainRun) -> EntryList:
        """The entries of a :func:`tail_run` over ``buf``, the run kept as :attr:`plain`."""
        entries = cls.__new__(cls)
        entries.buf, entries.plain, entries.end, entries.words = buf, run, run[0], run[2]
        entries.offsets = array.array("q", run[1])
        entries.others = {}
        entries._epoch = _RUN_EPOCH  # replaced by clear(), as another list's would be
        return entries

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self) -> Iterator[ScanEntry]:
        return self._rows(self._epoch)

    def _rows(self, epoch: object) -> Iterator[ScanEntry]:
        row = 0
        unpack = _TAIL.unpack_from
        while self._epoch is epoch and row < len(self.offsets):
            other = self.others.get(row)
            if other is None:
                off = self.offsets[row]
                size = (self.offsets[row + 1] if row + 1 < len(self.offsets) else self.end) - off
                seq, stamp, word = unpack(self.buf, off + _TAIL_AT)
                yield (off, _PUT, seq, stamp / 1e6, 0.0, str(word), b"", size)
            else:
                yield other
            row += 1

    def records(self, file: str = "") -> list[LogRecord]:
        """Every record of the list, whole, as the log's ``read`` gives it, without
        checking the checksums again: the walk that made the list verified them in
        :attr:`buf` (a refresh's records, for the subscribers). O(their bytes).

        Raises:
            CorruptRecordError: a key text is not UTF-8 (a record no sowlib writes),
                naming ``file``.
        """
        buf = self.buf
        return [decode_intact(buf, off, file) for off in self.offsets]

    @property
    def last_offset(self) -> int:
        """The offset of the last record, or 0 when there is none."""
        return self.offsets[-1] if self.offsets else 0

    def sizes(self) -> array.array[int]:
        """The framed size of each record, in row order; O(records), C-level."""
        offsets = self.offsets
        sizes = array.array("q", map(sub, islice(offsets, 1, None), offsets))
        if offsets:
            sizes.append(self.end - offsets[-1])
        for row, entry in self.others.items():
            sizes[row] = entry[7]
        return sizes

    def seq_at(self, row: int) -> int:
        """The sequence number of the record at ``row`` (read from the bytes); O(1)."""
        other = self.others.get(row)
        if other is not None:
            return other[2]
        seq: int = _TAIL.unpack_from(self.buf, self.offsets[row] + _TAIL_AT)[0]
        return seq

    def rows_from(self, row: int) -> EntryList:
        """The entries from ``row`` on, as a list of their own over the same bytes."""
        tail = EntryList(self.buf)
        tail.offsets = self.offsets[row:]
        tail.words = self.words[row:]
        tail.others = {r - row: entry for r, entry in self.others.items() if r >= row}
        tail.end = self.end
        return tail

    def append(self, entry: ScanEntry) -> None:
        """Add one record's entry (kept whole) after the others."""
        self.plain = None  # no longer only the run
        self.others[len(self.offsets)] = entry
        self.offsets.append(entry[0])
        self.words.append(0)
        self.end = entry[0] + entry[7]

    def extend(self, more: EntryList) -> None:
        """Add the entries of ``more`` (the records right after these, in the same bytes)."""
        self.plain = None  # no longer only the run
        shift = len(self.offsets)
        self.others.update((row + shift, entry) for row, entry in more.others.items())
        self.offsets.extend(more.offsets)
        self.words.extend(more.words)
        self.buf, self.end = more.buf, more.end

    def clear(self) -> None:
        """Forget every entry and end every iterator over them."""
        self._epoch = object()
        self.buf = b""
        self.plain = None
        del self.offsets[:], self.words[:]
        self.others.clear()


def verify_columns(buf: Buf, start: int, limit: int) -> tuple[int, EntryList]:
    """Follow intact records from ``start``, checksums included, collecting their entries.

    O(bytes): what ``walk.verify_entries_by_record`` does, with the same stopping point:
    the first position that does not hold an intact record (bad marker, kind byte, length
    or checksum, or fields that do not add up to the length).

    Returns:
        ``(offset after the last intact record, their entries)``.
    """
    entries = EntryList(buf)
    native = NATIVE_COMMON_RUN
    if native is None:
        off = common_run(buf, start, limit, entries)
    else:
        off, packed, entries.words = native(buf, start, limit)  # a new list
        entries.offsets.frombytes(packed)
    while True:
        entry = _check_other(buf, off, limit)
        if entry is None:
            entries.end = off
            return off, entries
        entries.append(entry)
        off = entries.end
        if native is None:
            off = common_run(buf, off, limit, entries)
        else:
            off, packed, words = native(buf, off, limit)
            entries.offsets.frombytes(packed)
            entries.words.extend(words)


def common_run(buf: Buf, off: int, limit: int, entries: EntryList) -> int:
    """Add the intact common records from ``off`` to ``entries``; where the run stops
    (a record in another form, or not intact). The reference of the C form
    ``recordread.common_run``; O(bytes of the run)."""
    unpack = _COMMON.unpack_from
    digest = xxhash.xxh3_64_digest
    tag = _COMMON_TAG
    overhead = _FAST_OVERHEAD
    add_off, add_word = entries.offsets.append, entries.words.append
    stop = limit - _FAST_OVERHEAD
    while off <= stop:
        length, head, payload, word = unpack(buf, off)
        nxt = off + length
        if head != tag or length != payload + overhead or nxt > limit:
            break
        end = nxt - 8
        if digest(buf[off:end]) != buf[end:nxt]:
            break
        add_off(off)
        add_word(word)
        off = nxt
    return off


def tail_run(buf: Buf, off: int, limit: int) -> PlainRun | tuple[()] | None:
    """The intact common records from ``off`` (as :func:`common_run` finds them) when
    there is at least one and the four bytes after the last, wholly before ``limit``,
    are a zero length (nothing written there yet): ``(end of the run, offsets, u64 keys,
    framed sizes, seq of the last record, payloads)``. Then :func:`verify_columns` from
    ``off`` gives the same records (the record it next looks at, a zero length, is not
    intact). ``()`` when that zero length is at ``off`` itself (nothing new), else None.
    The reference of the C form ``recordread.tail_run``; O(bytes of the run)."""
    limit = min(limit, len(buf))
    if 0 <= off <= limit - _LENGTH.size and _LENGTH.unpack_from(buf, off)[0] == 0:
        return ()
    entries = EntryList(buf)
    end = common_run(buf, off, limit, entries)
    if end == off or end + _LENGTH.size > limit or _LENGTH.unpack_from(buf, end)[0] != 0:
        return None
    offsets = entries.offsets.tolist()
    sizes = [b - a for a, b in zip(offsets, [*offsets[1:], end], strict=True)]
    payloads = [
        bytes(buf[at + _FAST_OVERHEAD - 8 : at + size - 8])
        for at, size in zip(offsets, sizes, strict=True)
    ]
    seq: int = _TAIL.unpack_from(buf, offsets[-1] + _TAIL_AT)[0]
    return end, offsets, entries.words, sizes, seq, payloads


def _load_tail_run() -> Callable[[Buf, int, int], PlainRun | tuple[()] | None] | None:
    module = optional_module("sowlib.storage.recordread")
    return None if module is None else getattr(module, "tail_run", None)


NATIVE_TAIL_RUN = _load_tail_run()
"""The C form of :func:`tail_run`, or None (not built, or turned off)."""


def _check_other(buf: Buf, off: int, limit: int) -> ScanEntry | None:
    """The entry of the intact record at ``off`` (any form), or None; the reference's
    checks, in its order (the fields are decoded only once the checksum holds)."""
    if off > limit - RECORD_OVERHEAD:
        return None
    length, marker, kb, k, _p, seq, ts, _w = HEAD_U64.unpack_from(buf, off)
    nxt = off + length
    kind = KINDS[kb & KIND_MASK]
    if marker != RECORD_MARKER or length < RECORD_OVERHEAD or nxt > limit or kind is None:
        return None
    if kb & FLAG_RESERVED or expected_length(buf, off, length, kb, k) != length:
        return None
    end = nxt - 8
    if xxhash.xxh3_64_digest(buf[off:end]) != buf[end:nxt]:
        return None
    exp, corr, key, _pos = decode_fields(buf, off, kb, k)
    return (off, kind, seq, ts / 1e6, exp / 1e6, key, corr, length)
