"""Which shard holds a key: :func:`shard_of`, the same in every process.

Imports xxhash, ``sowlib.document`` and ``sowlib.errors``; nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import xxhash

from sowlib.document import canonical_text
from sowlib.errors import ConfigError

__all__ = ["shard_of"]


def shard_of(key_values: Sequence[Any], shards: int | None = None) -> int:
    """A stable shard number for a record's key values; O(len(key_values)).

    The values are hashed by their canonical text (the rule SOW keys use, so
    ``5``, ``5.0`` and ``"5"`` land together) with xxhash64, which is the same in
    every process and Python version (unlike ``hash``).

    Args:
        key_values: the values of the topic's key fields, in key order.
        shards: the shard count; None returns the unreduced 64-bit hash.
    Returns:
        ``0 <= n < shards`` (or the 64-bit hash).
    Raises:
        ConfigError: ``shards`` below 1.

    Example:
        >>> shard_of([42], 4) == shard_of(["42"], 4) == shard_of([42.0], 4)
        True
    """
    text = "\x1f".join("\x00" if (t := canonical_text(v)) is None else t for v in key_values)
    digest = xxhash.xxh64_intdigest(text.encode("utf-8"))
    if shards is None:
        return digest
    if shards < 1:
        raise ConfigError("shards", f"{shards!r} is not a positive shard count")
    return digest % shards
