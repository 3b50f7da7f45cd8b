"""Saved key sets not used yet: positions into the topic's key list (imports only attrs).

An index loaded from a checkpoint keeps each key set packed until a query or a
write first reads or changes it.
"""

from __future__ import annotations

import array
from collections.abc import Iterator, Sequence

import attrs

from sowlib.index.types import Key, KeySet

__all__ = ["PackedKeys", "PendingKeys", "pack_positions"]


@attrs.frozen
class PackedKeys:
    """A saved key set not yet used: positions into the topic's key list.

    Turned into a key set the first time the index changes it (or, for most reads, reads
    it), so a reopen does not build a set for every value and a bucket no query touches
    costs four bytes per key. Iterating it lists its keys; a hash index hands it to a
    query as it is, and the topic's C reader reads its records off the positions.
    """

    keys: Sequence[Key]
    positions: array.array[int]
    start: int
    count: int

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Key]:
        """The keys, in their saved order (each looked up in the key list)."""
        return map(self.keys.__getitem__, self.positions[self.start : self.start + self.count])

    def __contains__(self, key: object) -> bool:
        return key in list(self)

    def unpack(self) -> KeySet:
        """The keys as a key set (sized for its length)."""
        chunk = self.positions[self.start : self.start + self.count]
        return dict.fromkeys(map(self.keys.__getitem__, chunk))


def pack_positions(
    keys: Sequence[Key], flat: array.array[int], positions: Sequence[int]
) -> PackedKeys:
    """A key set of ``keys[p]`` for each of ``positions``, appended to the shared column
    ``flat``; O(len(positions)), C-level."""
    start = len(flat)
    flat.extend(positions)
    return PackedKeys(keys, flat, start, len(positions))


class PendingKeys:
    """A saved key set that writes changed but nothing read yet: the packed keys and the
    keys added and removed since, so that a write does not unpack the whole set (an
    update touches two sets; unpacking each costs O(its keys), milliseconds for a set of
    thousands of keys spread over memory).

    Turned into a key set by :meth:`unpack` the first time the index reads it. The
    index only removes keys it filed, so the count is exact; when the removals reach the
    packed count it is computed from the keys themselves.
    """

    __slots__ = ("added", "base", "removed")

    def __init__(self, base: PackedKeys) -> None:
        self.base = base
        self.added: KeySet = {}
        self.removed: set[Key] = set()

    def __setitem__(self, key: Key, _value: None) -> None:
        if key in self.removed:
            self.removed.discard(key)
        else:
            self.added[key] = None

    def pop(self, key: Key, _default: None = None) -> None:
        """Remove ``key`` (absent is fine)."""
        if key in self.added:
            del self.added[key]
        else:
            self.removed.add(key)

    def update(self, keys: KeySet) -> None:
        """Add every key of ``keys``."""
        for key in keys:
            self[key] = None

    def __len__(self) -> int:
        if len(self.removed) >= self.base.count:
            return len(self.unpack())
        return self.base.count - len(self.removed) + len(self.added)

    def unpack(self) -> KeySet:
        """The keys as a key set."""
        keys = self.base.unpack()
        keys.update(self.added)
        for key in self.removed:
            keys.pop(key, None)
        return keys
