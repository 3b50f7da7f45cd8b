"""The type of the keys indexes hold: a topic's in-memory key (imports nothing from sowlib).

Content-keyed topics hold their 64-bit hash keys as ``int`` (no text per key);
topics with publisher-supplied or generated keys hold the key text.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["Key", "KeySet"]

Key: TypeAlias = int | str

KeySet: TypeAlias = dict[Key, None]
"""The keys an index files under one value: a dict of keys to None rather than a set,
because CPython's cyclic collector does not track a dict that holds only atomic
objects, while it walks every member of every set on a full collection (at millions of
keys, a pause of seconds)."""
