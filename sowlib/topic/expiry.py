"""The expiration queue of a topic: ``(when, seq, key)`` in a heap (spec §10).

Imports only ``index.types``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from sowlib.index.types import Key

__all__ = ["Expiry"]


class Expiry:
    """Pending expirations, earliest first; O(log n) per push and pop.

    Entries are hints: a later publish or a delete of the same key makes one stale,
    which the topic detects by comparing the key's live seq and expiration.
    """

    __slots__ = ("enabled", "heap")

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        #: The entries, a heap (empty: nothing can expire; a read checks this first,
        #: without asking the clock). Changed in place, never rebound: a reader may
        #: hold it (``Views.key_reader``).
        self.heap: list[tuple[float, int, Key]] = []

    def __len__(self) -> int:
        return len(self.heap)

    def push(self, when: float, seq: int, key: Key) -> None:
        """Expect ``key`` (at ``seq``) to expire at ``when``; ignored when disabled."""
        if self.enabled and when > 0:
            heapq.heappush(self.heap, (when, seq, key))

    def load(self, entries: Iterable[tuple[float, int, Key]]) -> None:
        """Replace the queue with ``entries`` (open, reload); O(n)."""
        # In place: the list is never rebound (the C reader by key holds it).
        self.heap[:] = [e for e in entries if e[0] > 0] if self.enabled else []
        heapq.heapify(self.heap)

    def due(self, now: float) -> bool:
        """True when an entry's time has come."""
        return bool(self.heap) and self.heap[0][0] <= now

    def pop_due(self, now: float) -> Iterator[tuple[float, int, Key]]:
        """Pop and yield every entry due at ``now``, earliest first."""
        heap = self.heap
        while heap and heap[0][0] <= now:
            yield heapq.heappop(heap)
