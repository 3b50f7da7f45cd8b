"""Saving an :class:`IndexSet` to bytes and loading it back without any document.

Keys are saved as their positions in the topic's key order (the caller's list),
so a load files the very key objects the key map holds: no second copy of a key
per index. Imports only ``msgpack``, ``xxhash`` and ``index.*``.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import msgpack
import xxhash

from sowlib.index.indexset import IndexSet
from sowlib.index.packed import PackedKeys
from sowlib.index.types import Key, KeySet
from sowlib.index.values import all_below

__all__ = ["PositionFinder", "dump_indexes", "index_snapshot", "load_indexes"]

PositionFinder = Callable[[Sequence[Key]], Callable[[Iterable[Key]], bytes] | None]
"""Given the key list being saved, a function giving the positions of some of its keys in
that list as a column of native u32, ascending (or None: the dict of positions is used,
which is the reference)."""

_VERSION = 1
# Positions are stored as little-endian u32 whatever the machine's byte order.
_SWAP = sys.byteorder != "little"


# msgpack holds integers in [-2**63, 2**64); an index value outside (a JSON number with
# 20 or more digits is valid input) is saved as this extension type: its two's-complement
# bytes, little-endian. Index values are only str, int, float, bool and None, so no other
# extension type is ever saved.
_BIG_INT = 1


def _big_int(value: object) -> msgpack.ExtType:
    if not isinstance(value, int):
        raise TypeError(f"cannot save an index value of type {type(value).__name__}")
    size = value.bit_length() // 8 + 1
    return msgpack.ExtType(_BIG_INT, value.to_bytes(size, "little", signed=True))


def _ext(code: int, data: bytes) -> int:
    if code != _BIG_INT:
        raise ValueError(f"unknown extension type {code}")
    return int.from_bytes(data, "little", signed=True)


def _pack(positions: Iterable[int]) -> bytes:
    column = array.array("I", positions)
    if _SWAP:
        column.byteswap()
    return column.tobytes()


def _unpack(data: bytes) -> array.array[int]:
    column = array.array("I")
    column.frombytes(data)
    if _SWAP:
        column.byteswap()
    return column


class _Positions:
    """Where each key sits in the key list being saved; the dict is built only when a
    set needs it, unless ``finder`` gives a faster way (see :data:`PositionFinder`)."""

    def __init__(self, keys: Sequence[Key], finder: PositionFinder | None = None) -> None:
        self.keys = keys
        self._finder = finder
        self._where: dict[Key, int] | None = None
        self._column: Callable[[Iterable[Key]], bytes] | None = None
        # id(list) -> (list, whether it is a prefix of keys): a packed set's positions
        # into such a list are positions into keys too.
        self._prefix: dict[int, tuple[Sequence[Key], bool]] = {}

    def extend(self, flat: array.array[int], keys: Collection[Key]) -> None:
        """Append the positions of ``keys`` to ``flat``, ascending (a load then reads the
        key objects in the order they were allocated, not scattered over the heap)."""
        if not keys:
            return
        if self._where is None and self._column is None:
            finder, self._finder = self._finder, None
            self._column = None if finder is None else finder(self.keys)
            if self._column is None:
                self._where = dict(zip(self.keys, range(len(self.keys)), strict=True))
        if self._column is not None:
            flat.frombytes(self._column(keys))
        else:
            assert self._where is not None
            flat.extend(sorted(map(self._where.__getitem__, keys)))

    def reusable(self, packed: PackedKeys) -> bool:
        """True when ``packed``'s positions are positions into the keys being saved."""
        seen = self._prefix.get(id(packed.keys))
        if seen is None:
            other = packed.keys
            ok = other is self.keys or (
                len(other) <= len(self.keys) and self.keys[: len(other)] == other
            )
            seen = self._prefix[id(other)] = (other, ok)
        return seen[1]


def _dump_sets(sets: Sequence[Collection[Key] | PackedKeys], where: _Positions) -> list[bytes]:
    """Each set as its keys' positions, then one flat column (counts first)."""
    counts = _pack(map(len, sets))
    flat = array.array("I")
    for keys in sets:
        if isinstance(keys, PackedKeys):
            if where.reusable(keys):
                flat.extend(keys.positions[keys.start : keys.start + keys.count])
            else:
                where.extend(flat, keys.unpack())
        else:
            where.extend(flat, keys)
    if _SWAP:
        flat.byteswap()
    return [counts, flat.tobytes()]


def _load_sets(packed: list[bytes], keys: Sequence[Key]) -> list[set[Key]]:
    counts, flat = _unpack(packed[0]), _unpack(packed[1])
    take = keys.__getitem__
    out: list[set[Key]] = []
    pos = 0
    # Slices of the array, not of a list: no int object per position stays alive.
    # A set grown one key at a time ends up to four times larger than needed; a copy
    # of a set is sized for its length.
    for n in counts:
        out.append(set(set(map(take, flat[pos : pos + n]))))
        pos += n
    if pos != len(flat):
        raise ValueError("positions left over")
    return out


def dump_indexes(
    indexes: IndexSet, keys: Sequence[Key], finder: PositionFinder | None = None
) -> bytes:
    """The declared indexes of ``indexes`` as bytes (with a checksum); O(entries).

    Args:
        indexes: the topic's indexes (on-demand memo indexes are saved too).
        keys: every live key, in the order the loader will pass them.
        finder: a faster way to the keys' positions (the same bytes either way).
    """
    where = _Positions(keys, finder)
    hashes = []
    for index in indexes.hashes:
        entries, buckets, loose = index.saved()
        hashes.append([[list(e) for e in entries], _dump_sets([*buckets, loose], where)])
    memos = []
    for path, memo in indexes.memos.items():
        maps, sets = memo.saved()
        memos.append(
            [
                path.to_text(),
                [[list(m), _dump_sets(list(m.values()), where)] for m in maps],
                _dump_sets(sets, where),
            ]
        )
    body: bytes = msgpack.packb(
        [
            _VERSION,
            indexes.names(),
            len(keys),
            indexes.live,
            _dump_sets([indexes.irregular], where),
            hashes,
            memos,
        ],
        default=_big_int,
    )
    return xxhash.xxh3_64_digest(body) + body


def load_indexes(indexes: IndexSet, blob: bytes, keys: Sequence[Key]) -> bool:
    """Fill ``indexes`` from :func:`dump_indexes`'s bytes; O(entries), no document read.

    Returns False, leaving ``indexes`` cleared, when the bytes are damaged, of another
    layout, for other index definitions or for another set of keys: the caller then
    rebuilds the indexes from the records.
    """
    try:
        digest, body = blob[:8], blob[8:]
        if xxhash.xxh3_64_digest(body) != digest:
            return False
        version, names, count, live, irregular, hashes, memos = msgpack.unpackb(
            body, strict_map_key=False, ext_hook=_ext
        )
        if version != _VERSION or count != len(keys):
            return False
        _restore(indexes, keys, memos, hashes)
        if names != indexes.names():
            raise ValueError("other index definitions")
        indexes.restore_counts(live, _load_sets(irregular, keys)[0])
        return True
    except (ValueError, TypeError, IndexError, KeyError, msgpack.UnpackException):
        indexes.clear()
        return False


def _packed_sets(packed: list[bytes], keys: Sequence[Key]) -> list[PackedKeys]:
    """:func:`_load_sets`, each set left packed until the index first uses it."""
    counts, flat = _unpack(packed[0]), _unpack(packed[1])
    out: list[PackedKeys] = []
    pos = 0
    for n in counts:
        out.append(PackedKeys(keys, flat, pos, n))
        pos += n
    if pos != len(flat) or not all_below(flat, len(keys)):
        raise ValueError("positions out of range")
    return out


def _restore(indexes: IndexSet, keys: Sequence[Key], memos: Any, hashes: Any) -> None:
    if len(hashes) != len(indexes.hashes):
        raise ValueError("other hash indexes")
    for index, (entries, sets) in zip(indexes.hashes, hashes, strict=True):
        loaded = _packed_sets(sets, keys)
        index.restore(map(tuple, entries), loaded[:-1], set(loaded[-1].unpack()))
    for text, maps, sets in memos:
        memo = indexes.ensure_memo(text, _NoRecords())
        restored: list[dict[Any, KeySet | PackedKeys]] = []
        for values, packed in maps:
            restored.append(dict(zip(values, _packed_sets(packed, keys), strict=True)))
        memo.restore(restored, _load_sets(sets, keys))


class _NoRecords:
    """A source with no records: :meth:`IndexSet.ensure_memo` defines an empty index."""

    def field_values(self, path: Any) -> list[tuple[Key, Any]]:
        return []


def index_snapshot(indexes: IndexSet) -> tuple[Any, ...]:
    """A comparable copy of everything ``indexes`` holds (for checks and tests); O(entries)."""
    hashes = []
    for index in indexes.hashes:
        entries, buckets, loose = index.export()
        hashes.append(
            (
                {e: frozenset(b) for e, b in zip(entries, buckets, strict=True)},
                frozenset(loose),
            )
        )
    memos = {}
    for path, memo in indexes.memos.items():
        maps, sets, counts = memo.export()
        memos[path] = (
            [{v: frozenset(s) for v, s in m.items()} for m in maps],
            [frozenset(s) for s in sets],
            counts,
        )
    return (indexes.names(), indexes.live, frozenset(indexes.irregular), hashes, memos)
