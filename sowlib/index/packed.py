"""Saved key sets not used yet: positions into the topic's key list (imports only attrs).

An index loaded from a checkpoint keeps each key set packed until a query or a
write first reads or changes it.
"""

from __future__ import annotations

import array
from collections.abc import Sequence

import attrs

from sowlib.index.types import Key, KeySet

__all__ = ["PackedKeys", "pack_positions"]


@attrs.frozen
class PackedKeys:
    """A saved key set not yet used: positions into the topic's key list.

    Turned into a key set the first time the index reads or changes it, so a reopen
    does not build a set for every value and a bucket no query touches costs four
    bytes per key.
    """

    keys: Sequence[Key]
    positions: array.array[int]
    start: int
    count: int

    def __len__(self) -> int:
        return self.count

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
