"""The key map: where the live version of each key sits in the log, and nothing more.

The one owner of an entry's in-memory layout. Content keys (64-bit hashes) are held
as ints (in the C KeyTable where built, unboxed), other keys as their text. Imports
only ``storage``, ``index.types`` and the siblings ``logview`` and ``slots``.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import is_, itemgetter, le, lt
from typing import cast

import msgpack

from sowlib.index.types import Key
from sowlib.storage import EntryList, RecordKind
from sowlib.topic.logview import Header, LogView
from sowlib.topic.slots import (
    Fields,
    Sizes,
    Slot,
    Slots,
    fill_like,
    new_sizes,
    new_slots,
    sizes_of_columns,
    slots_of_columns,
)

__all__ = ["Header", "KeyMap"]

_PUT = RecordKind.PUT
_U64 = 1 << 64
_BLOB_VERSION = 4
# Version 3 had no column of record sizes: they are read from the log once on its load.
_SIZELESS_VERSION = 3
_SWAP = sys.byteorder != "little"


def _column(code: str, values: Iterable[int]) -> bytes:
    col = array.array(code, values)
    if _SWAP:
        col.byteswap()
    return col.tobytes()


def _u64_column(keys: list[Key]) -> bytes | None:
    """``keys`` as a column of native u64, or None when one is not an int in [0, 2**64)."""
    try:
        return array.array("Q", cast("list[int]", keys)).tobytes()
    except (TypeError, OverflowError):
        return None


def _unpack_q(data: bytes) -> array.array[int]:
    col = array.array("q")
    col.frombytes(data)
    return col


def _list_q(data: bytes) -> list[int]:
    """A column of native int64 as a list."""
    col = array.array("q")
    col.frombytes(data)
    return col.tolist()


def _uncolumn(code: str, data: bytes) -> list[int]:
    col = array.array(code)
    col.frombytes(data)
    if _SWAP:
        col.byteswap()
    return col.tolist()


# What KeyMap._columns takes from the entries: keys, slots, sizes, tombstone positions.
_Columns = tuple[
    list[Key],
    Sequence[Slot],
    Sequence[int],
    list[int],
]


class KeyMap:
    """``key -> live record`` for one topic; O(1) per operation.

    A key whose record has no expiration and no correlation id is held as its bare
    log offset (one int); its other header fields are read from the log when needed.
    Each live record's size sits in a second table beside it (an unboxed int in the C
    KeyTable), so an update or a delete accounts for the bytes it frees without reading
    the old record back.
    Others keep a plain tuple of the header fields (an exact tuple of atomic values,
    which CPython's cyclic collector stops tracking). The entries live in a
    :class:`~sowlib.topic.slots.Slots` table: the C KeyTable for content keys where it
    is built, else a dict.

    Args:
        log: the topic's log.
        content: keys are content keys (decimal text of a 64-bit hash) held as ints.
    """

    __slots__ = ("_log", "_sizes", "_watchers", "content", "live_bytes", "slot_of", "slots")

    def __init__(self, log: LogView, *, content: bool) -> None:
        self._log = log
        self.content = content
        #: Bytes the live records occupy in the log.
        self.live_bytes = 0
        #: The table of entries (replaced whole by a reload, a bulk load or compaction;
        #: :meth:`watch_slots` tells a reader that holds it).
        self.slots: Slots
        #: ``slot_of(key)``: the entry of ``key`` (its bare offset, or its header fields
        #: as :meth:`header` orders them), or None; the table's own method (one C call
        #: where the C KeyTable holds the keys), for the by-key read.
        self.slot_of: Callable[[Key], Slot | None]
        # key -> the size in the log of its live record (same keys as ``slots``).
        self._sizes: Sizes = new_sizes(content)
        self._watchers: list[Callable[[Slots], None]] = []
        self._install(new_slots(content))

    def watch_slots(self, watcher: Callable[[Slots], None]) -> None:
        """Call ``watcher(table)`` with the current table now, and again each time another
        is installed: for a reader that holds the table (the C reader by key)."""
        self._watchers.append(watcher)
        watcher(self.slots)

    def _install(self, slots: Slots) -> None:
        self.slots = slots
        self.slot_of = slots.get
        for watcher in self._watchers:
            watcher(slots)

    # ------------------------------------------------------------------ keys

    def key_of(self, sow_key: str) -> Key:
        """The in-memory key of a SOW key's text (an int for a content key); O(len)."""
        if (
            self.content
            and sow_key.isascii()
            and sow_key.isdigit()
            and len(sow_key) <= 20
            and (sow_key[0] != "0" or sow_key == "0")
        ):
            value = int(sow_key)
            if value < _U64:
                return value
        return sow_key

    def keys_of(self, texts: list[str]) -> list[Key]:
        """:meth:`key_of` of each text (C-level passes when every one is a content key's
        canonical digits)."""
        got = self._keys_of(texts)
        return got if got is not None else list(map(self.key_of, texts))

    @staticmethod
    def text_of(key: Key) -> str:
        """The SOW key text of an in-memory key."""
        return key if type(key) is str else str(key)

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, key: object) -> bool:
        return key in self.slots

    def keys(self) -> list[Key]:
        """A snapshot of every live key, in insertion order (content keys that are not
        the text of a 64-bit hash after the others, where the C KeyTable holds them)."""
        return list(self.slots.keys())

    def __iter__(self) -> Iterator[Key]:
        return iter(self.keys())

    # ------------------------------------------------------------------ entries

    def offset(self, key: Key) -> int | None:
        """The log offset of ``key``'s live record, or None; O(1)."""
        slot = self.slots.get(key)
        if slot is None or isinstance(slot, int):
            return slot
        return slot[0]

    def offsets(self) -> list[tuple[Key, int]]:
        """``(key, offset)`` of every live record."""
        return [(k, s if isinstance(s, int) else s[0]) for k, s in self.slots.items()]

    def live_offsets(self) -> list[int]:
        """The offset of every live record, in :meth:`keys` order (C-level when every
        entry is a bare offset)."""
        slots = list(self.slots.values())
        if set(map(type, slots)) <= {int}:
            return slots  # type: ignore[return-value]
        return [s if type(s) is int else s[0] for s in slots]  # type: ignore[index]

    def header(self, key: Key) -> Header | None:
        """The header fields of ``key``'s live record (read from the log for a bare offset)."""
        slot = self.slots.get(key)
        if slot is None:
            return None
        if isinstance(slot, int):
            return self._log.header(slot)
        return Header(*slot)

    def size(self, key: Key) -> int | None:
        """The size in the log of ``key``'s live record (kept in memory), or None; O(1)."""
        return self._sizes.get(key)

    def put(self, key: Key, head: Header) -> bool:
        """Point ``key`` at a record; True when the key is new; O(1), nothing read."""
        old = self._sizes.get(key)
        self._sizes[key] = head.size
        if head.expiration or head.correlation_id:
            self.slots[key] = head[:]  # an exact tuple, in the order Header(*slot) reads
        else:
            self.slots[key] = head.offset
        if old is None:
            self.live_bytes += head.size
            return True
        self.live_bytes += head.size - old
        return False

    def put_offset(self, key: Key, offset: int, size: int) -> bool:
        """:meth:`put` of a record without expiration or correlation id; O(1)."""
        table = self._sizes
        old = table.get(key)
        table[key] = size
        self.slots[key] = offset
        if old is None:
            self.live_bytes += size
            return True
        self.live_bytes += size - old
        return False

    def put_bare(self, keys: list[Key], offsets: list[int], sizes: list[int]) -> list[bool]:
        """:meth:`put` of records without expiration or correlation id, in order; nothing
        read. C-level passes (the C tables' ``swap`` and ``assign``: one probe per key and
        table; with dicts a lookup per distinct key, then two table updates, the last
        version of a repeated key winning as it does one put at a time); equal to
        :meth:`put_bare_each` (``tests/test_publish_batch.py``)."""
        table = self._sizes
        swap = getattr(table, "swap", None)
        assign = getattr(self.slots, "assign", None)
        if swap is not None and assign is not None and type(keys) is list:
            # The C tables: one probe per key and table, pairs set in order (a repeated
            # key is new only at its first position, as one put at a time gives).
            olds = swap(keys, list(sizes), None)
            assign(keys, list(offsets))
            self.live_bytes += sum(sizes) - sum(filter(None, olds))
            return list(map(is_, olds, repeat(None)))
        last = dict(zip(keys, sizes, strict=True))
        olds = list(map(table.get, last))
        self.slots.update(zip(keys, offsets, strict=True))
        table.update(last.items())
        self.live_bytes += sum(last.values()) - sum(filter(None, olds))
        news = list(map(is_, olds, repeat(None)))
        if len(last) == len(keys):
            return news
        # A repeated key is an insert at most at its first position.
        inserted = [False] * len(keys)
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
        for key in compress(last, news):
            inserted[first[key]] = True
        return inserted

    def repoint(self, keys: list[Key], offsets: list[int]) -> bool:
        """Point ``keys`` at ``offsets``, copies of their records (the sizes stay): a
        follower's carry-over. True when every key was held, at offsets ascending in the
        order of ``keys`` (none came twice); else the caller drops the changed map."""
        swap = getattr(self.slots, "swap", None)
        olds: list[int]  # (an entry not bare, or None: the TypeError below)
        if swap is None:
            olds = cast("list[int]", list(map(self.slots.get, keys)))
            self.slots.update(zip(keys, offsets, strict=True))
        else:
            olds = swap(keys, offsets, None)
        try:
            return None not in olds and all(map(lt, olds, islice(olds, 1, None)))
        except TypeError:
            return False

    def put_bare_each(self, keys: list[Key], offsets: list[int], sizes: list[int]) -> list[bool]:
        """:meth:`put_bare` one key at a time (its reference)."""
        table = self._sizes
        slots, get = self.slots, table.get
        inserted: list[bool] = []
        flag = inserted.append
        live = self.live_bytes
        for key, offset, size in zip(keys, offsets, sizes, strict=True):
            old = get(key)
            slots[key] = offset
            table[key] = size
            live += size if old is None else size - old
            flag(old is None)
        self.live_bytes = live
        return inserted

    def remove(self, key: Key) -> None:
        """Forget ``key`` (present); O(1), nothing read."""
        self.slots.pop(key)
        self.live_bytes -= self._sizes.pop(key)

    def clear(self) -> None:
        """Forget every key."""
        self.slots.clear()
        self._sizes.clear()
        self.live_bytes = 0

    def expiring(self) -> list[tuple[float, int, Key]]:
        """``(expiration, seq, key)`` of every live record that expires."""
        return [
            (s[3], s[1], k) for k, s in self.slots.items() if not isinstance(s, int) and s[3] > 0
        ]

    def sorted_offsets(self) -> list[int] | None:
        """Every live record's offset, ascending, in one C pass; None where the table is
        not the C one or an entry is not bare (compaction then takes :meth:`remap`)."""
        column = getattr(self.slots, "sorted_offsets", lambda: None)()
        return None if column is None else _list_q(column)

    def remap_sorted(self, olds: list[int], news: list[int]) -> None:
        """:meth:`remap` of ``{olds[i]: news[i]}`` (``olds`` as :meth:`sorted_offsets`
        gave them, ``news`` as ``AppendLog.compact_sorted`` gave them) in C passes (the
        offsets sorted with their positions and walked beside ``olds``, the table's
        index copied); equal to :meth:`remap` of that mapping (``tests/test_keytable_fill.py``)."""
        slots = new_slots(self.content)
        remapped = getattr(self.slots, "remapped_offsets", None)
        column = None
        if remapped is not None:
            column = remapped(array.array("q", olds), array.array("q", news))
        if column is None or not fill_like(slots, self.slots, None, column):
            self.remap(dict(zip(olds, news, strict=True)))
            return
        self._install(slots)

    def remap(self, mapping: dict[int, int]) -> None:
        """Apply compaction's ``{old offset: new offset}`` (C-level passes when every entry
        is a bare offset); record sizes do not change (records are copied verbatim)."""
        slots = new_slots(self.content)
        old = list(self.slots.values())
        if set(map(type, old)) <= {int}:
            moved = list(map(mapping.__getitem__, cast("list[int]", old)))
            # One C call copying the table's index where it can (no key probed).
            if not fill_like(slots, self.slots, None, moved):
                slots.update(zip(self.slots.keys(), moved, strict=True))
        else:
            slots.update(
                (k, mapping[s] if isinstance(s, int) else (mapping[s[0]], *s[1:]))
                for k, s in self.slots.items()
            )
        self._install(slots)

    # ------------------------------------------------------------------ replay

    def replay(
        self, scan: Iterable[tuple[int, RecordKind, int, float, float, str, bytes, int]]
    ) -> None:
        """Apply the log's ``scan_entries`` tuples (open: the tight loop of recovery).

        Into an empty map the entries are applied a column at a time (C-level maps and
        dict updates between tombstones); otherwise, or when a content key's text is not
        the canonical digits of a 64-bit value, one entry at a time.
        """
        if not self.slots:
            entries = scan if type(scan) is list else list(scan)
            columns = self._columns(entries)
            if columns is not None:
                # The walk's tuples go now; what the map keeps was made after them, so
                # the allocator can hand the walk's memory back.
                del entries, scan
                self._replay_columns(*columns)
                return
            scan = entries
        slots, table = self.slots, self._sizes
        get, pop = table.get, table.pop
        key_of = self.key_of
        content = self.content
        live = 0
        for offset, kind, seq, stamp, expires, text, corr, size in scan:
            # key_of inlined for the usual text (a content key's digits, no leading 0).
            if content and text.isdigit() and text.isascii() and len(text) < 20 and text[0] != "0":
                key: Key = int(text)
            else:
                key = key_of(text)
            old = get(key)
            if old is not None:
                live -= old
            if kind == _PUT:
                slots[key] = (
                    (offset, seq, stamp, expires, corr, size) if expires or corr else offset
                )
                table[key] = size
                live += size
            elif old is not None:
                pop(key)
                slots.pop(key)
        self.live_bytes += live

    def replay_columns(self, entries: EntryList) -> None:
        """:meth:`replay` of the log's ``scan_columns``: into an empty map, the columns are
        applied as they are (C-level dict updates between tombstones); else one by one."""
        if self.slots:
            self.replay(entries)
            return
        # A common record's key is its u64: the int key_of gives a content key, or its text.
        keys: list[Key] = list(entries.words) if self.content else list(map(str, entries.words))
        slots: array.array[int] | list[Slot] = entries.offsets
        tombstones: list[int] = []
        key_of = self.key_of
        for row, (offset, kind, seq, stamp, expires, text, corr, size) in entries.others.items():
            keys[row] = key_of(text)
            if kind != _PUT:
                tombstones.append(row)
            elif expires or corr:
                if type(slots) is not list:
                    slots = list(slots)
                slots[row] = (offset, seq, stamp, expires, corr, size)
        tombstones.sort()
        self._replay_columns(keys, slots, entries.sizes(), tombstones)

    def _columns(
        self, entries: list[tuple[int, RecordKind, int, float, float, str, bytes, int]]
    ) -> _Columns | None:
        """The columns :meth:`_replay_columns` applies, holding none of the entries' own
        numbers; None when a key's text needs :meth:`key_of` one by one."""
        keys = self._keys_of(list(map(itemgetter(5), entries)))
        if keys is None:
            return None
        offsets = array.array("q", map(itemgetter(0), entries))
        sizes = array.array("q", map(itemgetter(7), entries))
        slots: list[Slot] | None = None
        if any(map(itemgetter(4), entries)) or any(map(itemgetter(6), entries)):
            slots = [
                (off, seq, stamp, expires, corr, size) if expires or corr else off
                for off, (_o, _k, seq, stamp, expires, _t, corr, size) in zip(
                    offsets, entries, strict=True
                )
            ]
        kinds = list(map(itemgetter(1), entries))
        tombstones = []
        if kinds.count(_PUT) != len(kinds):
            tombstones = [i for i, kind in enumerate(kinds) if kind is not _PUT]
        return keys, slots if slots is not None else offsets, sizes, tombstones

    def _replay_columns(
        self,
        keys: list[Key],
        slot_of: Sequence[Slot],
        sizes: Sequence[int],
        tombstones: list[int],
    ) -> None:
        """:meth:`replay` into an empty map from :meth:`_columns`: C-level dict updates
        between tombstones."""
        count = len(keys)
        slots = new_slots(self.content)
        live_sizes = new_sizes(self.content)
        if not tombstones:
            bare = slot_of if isinstance(slot_of, array.array) else None
            column = _u64_column(keys) if self.content and bare is not None else None
            if column is not None and bare is not None and type(sizes) is array.array:
                # Both tables filled from columns, the sizes' one a copy of the slots'
                # index (one C call each where built).
                slots = slots_of_columns(True, column, bare.tobytes())
                # keys None: each key once, in the slots' order (else later puts win).
                once = None if len(slots) == count else keys
                if not fill_like(live_sizes, slots, once, sizes):
                    live_sizes.update(zip(keys, sizes, strict=True))
            else:
                slots.update(zip(keys, slot_of, strict=True))
                live_sizes.update(zip(keys, sizes, strict=True))
            live = sum(sizes) if len(slots) == count else sum(live_sizes.values())
        else:
            # Runs of PUTs applied with one update each; a tombstone pops its key.
            puts, put_sizes = zip(keys, slot_of, strict=True), zip(keys, sizes, strict=True)
            pos = 0
            for at in tombstones:
                slots.update(islice(puts, at - pos))
                live_sizes.update(islice(put_sizes, at - pos))
                key = next(puts)[0]
                next(put_sizes)
                slots.pop(key, None)
                live_sizes.pop(key, None)
                pos = at + 1
            slots.update(puts)
            live_sizes.update(put_sizes)
            live = sum(live_sizes.values())
        self._install(slots)
        self._sizes = live_sizes
        self.live_bytes = live

    def _keys_of(self, texts: list[str]) -> list[Key] | None:
        """:meth:`key_of` of each text, or None when some text needs it one by one."""
        if not self.content:
            return list(texts)
        joined = "," + ",".join(texts)
        # ASCII digits only (no sign, space, underscore or other digits int() takes),
        # none empty, none with a leading zero: exactly what key_of turns into an int.
        if not joined.isascii() or ",0" in joined or ",," in joined + ",":
            return None
        if not joined.replace(",", "").isdigit():
            return None
        try:
            ints = list(map(int, texts))
        except ValueError:  # a comma inside a text
            return None
        if ints and max(ints) >= _U64:
            return None
        return ints  # type: ignore[return-value]

    def fill_table(self, table: object, keys: Sequence[Key], values: object) -> bool:
        """Fill an empty table made like this map's (``slots.new_table``) with
        ``keys[i] -> values[i]`` in one C call, where ``keys`` (a list) are exactly this
        map's keys (``values`` as :func:`~sowlib.topic.slots.fill_like` takes them);
        False, the table left empty, when it cannot (then fill it pair by pair)."""
        return type(keys) is list and fill_like(table, self.slots, keys, values)

    def live_in_file_order(self) -> tuple[list[Key], list[int]]:
        """Every live key and its record's offset, ascending by offset; O(n) when the map
        is already in file order (after a replay), O(n log n) otherwise."""
        keys = list(self.slots.keys())
        slots = list(self.slots.values())
        if set(map(type, slots)) <= {int}:
            offsets: list[int] = slots  # type: ignore[assignment]
        else:
            offsets = [s if type(s) is int else s[0] for s in slots]  # type: ignore[index]
        if not all(map(le, offsets, islice(offsets, 1, None))):
            order = sorted(range(len(offsets)), key=offsets.__getitem__)
            keys = list(map(keys.__getitem__, order))
            offsets = list(map(offsets.__getitem__, order))
        return keys, offsets

    # ------------------------------------------------------------------ checkpoint

    def to_blob(self) -> tuple[bytes, list[Key]]:
        """The key map as bytes :meth:`load_blob` reads back, and the keys in the order
        :meth:`keys` lists them after that load; O(keys)."""
        slots = list(self.slots.values())
        full: list[tuple[Key, Fields]] = []
        if set(map(type, slots)) <= {int}:  # every entry a bare offset: C-level columns
            bare_keys: list[Key] = list(self.slots.keys())
            bare_offsets: list[int] = slots  # type: ignore[assignment]
        else:
            bare_keys, bare_offsets = [], []
            for key, slot in self.slots.items():
                if isinstance(slot, int):
                    bare_keys.append(key)
                    bare_offsets.append(slot)
                else:
                    full.append((key, slot))
        ints = self.content and set(map(type, bare_keys)) <= {int}
        blob: bytes = msgpack.packb(
            [
                _BLOB_VERSION,
                self.live_bytes,
                _column("Q", bare_keys) if ints else bare_keys,  # type: ignore[arg-type]
                _column("q", bare_offsets),
                _column("q", map(self._sizes.__getitem__, bare_keys)),
                [k for k, _ in full],
                [list(s) for _, s in full],
            ]
        )
        return blob, [*bare_keys, *(k for k, _ in full)] if full else bare_keys

    def load_blob(self, blob: bytes) -> bool:
        """Replace the content with :meth:`to_blob`'s bytes; False (unchanged) if unreadable."""
        try:
            version, live, keys, offsets, *rest = msgpack.unpackb(blob)
            if version == _BLOB_VERSION:
                sizes, full_keys, full = rest
            elif version == _SIZELESS_VERSION:
                sizes, (full_keys, full) = None, rest
            else:
                return False
            if _SWAP:  # the blob's columns are little-endian, the table's native
                keys = _uncolumn("Q", keys) if isinstance(keys, bytes) else keys
                offsets = array.array("q", _uncolumn("q", offsets)).tobytes()
                sizes = None if sizes is None else array.array("q", _uncolumn("q", sizes))
            slots = slots_of_columns(self.content, keys, offsets)
            if sizes is None:  # an older checkpoint: each record's size read once, here
                header = self._log.header
                sizes = array.array("q", [header(off).size for off in _unpack_q(offsets)])
            table = new_sizes(self.content)
            # The same keys as the slots, in the same order: the slots' index copied.
            if not fill_like(table, slots, None, sizes):
                table = sizes_of_columns(self.content, keys, bytes(sizes))
            full_slots = [tuple(slot) for slot in full]
            slots.update(zip(full_keys, full_slots, strict=True))
            table.update(zip(full_keys, [slot[5] for slot in full_slots], strict=True))
        except (ValueError, TypeError, msgpack.UnpackException):
            return False
        self._install(slots)
        self._sizes = table
        self.live_bytes = int(live)
        return True
