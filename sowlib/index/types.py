"""The type of the keys indexes hold: a topic's in-memory key (imports nothing from sowlib).

Content-keyed topics hold their 64-bit hash keys as ``int`` (no text per key);
topics with publisher-supplied or generated keys hold the key text.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["Key"]

Key: TypeAlias = int | str
