"""A bounded cache of hot Records (with their documents once decoded), by byte budget.

Imports only ``record`` and ``index.types``.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from itertools import repeat

from sowlib.index.types import Key
from sowlib.record import Record

__all__ = ["ADMIT", "ADMIT_BITS", "DEFAULT_CACHE_BYTES", "RecordCache", "record_cost"]

#: The default budget of a topic's record cache.
DEFAULT_CACHE_BYTES = 8 << 20

# What a cached Record costs beside its payload: the tuple, its fields, the dict
# slot. A decoded JSON-like document takes several times its text in objects.
_RECORD_OVERHEAD = 240
_DOC_FACTOR = 6


#: A record read by key is admitted on one call of :meth:`RecordCache.offer` in this many.
ADMIT = 8
#: Random bits that are all zero on one call in :data:`ADMIT`.
ADMIT_BITS = ADMIT.bit_length() - 1
_getrandbits = random.getrandbits


def record_cost(payload_len: int, decoded: bool) -> int:
    """Bytes a cached Record of a ``payload_len``-byte message is charged."""
    return _RECORD_OVERHEAD + payload_len * (1 + _DOC_FACTOR if decoded else 1)


class RecordCache:
    """``key -> Record``, least recently inserted first out, never over ``budget`` bytes.

    Reads (:meth:`get`) are one dict lookup and safe without the topic's lock;
    writes happen under it. A budget of 0 disables the cache. O(1) per operation.

    The insertion order is a queue of ``(key, record, cost)``; a key put again or
    dropped leaves its old entry in the queue, still charged, until it reaches the
    front, where only an entry that is still the cached one is removed from the map.
    So a put is two C-level appends and, when full, a pop from each end.

    Example:
        >>> cache = RecordCache(1 << 20)
        >>> cache.budget
        1048576
    """

    __slots__ = ("_order", "_records", "budget", "get", "used")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        #: Bytes charged for the entries in the queue.
        self.used = 0
        self._records: dict[Key, Record] = {}
        self._order: deque[tuple[Key, Record, int]] = deque()
        #: ``get(key)``: the cached Record of ``key``, or None; O(1). The dict's own
        #: method: a read by key is one C call.
        self.get: Callable[[Key], Record | None] = self._records.get

    def put(self, key: Key, rec: Record, cost: int) -> None:
        """Cache ``rec`` (charged ``cost`` bytes), evicting the oldest entries first."""
        if cost > self.budget:
            self.drop(key)
            return
        records, order = self._records, self._order
        used = self.used + cost
        while used > self.budget:
            old_key, old_rec, old_cost = order.popleft()
            used -= old_cost
            if records.get(old_key) is old_rec:
                del records[old_key]
        self.used = used
        records[key] = rec
        order.append((key, rec, cost))

    def offer(self, key: Key, rec: Record, cost: int) -> None:
        """:meth:`put`, on one call in :data:`ADMIT` on average (a record read by key).

        Records read by key once and never again (random reads over a large topic)
        would each evict an older entry; admitting a random share of them keeps that
        churn low, while a key read again and again gets in after a few reads and
        stays longer, since fewer entries push it out.
        """
        if not _getrandbits(ADMIT_BITS):
            self.put(key, rec, cost)
        else:
            self._records.pop(key, None)  # never keep an older version of the key

    def drop(self, key: Key) -> None:
        """Forget ``key`` (absent is fine); O(1). Its bytes are released when its
        queue entry is evicted."""
        self._records.pop(key, None)

    def drop_many(self, keys: Iterable[Key]) -> None:
        """:meth:`drop` of each of ``keys``, in one C-level pass (no Python call per
        key: a reader applying a refresh drops every key it installs); O(keys)."""
        if self._records:
            deque(map(self._records.pop, keys, repeat(None)), maxlen=0)

    def clear(self) -> None:
        """Forget everything."""
        self._records.clear()
        self._order.clear()
        self.used = 0

    def __len__(self) -> int:
        return len(self._records)

    def check(self) -> None:
        """Assert the invariants: within budget, the charged bytes add up, every
        cached record has its queue entry."""
        assert self.used <= self.budget, f"cache holds {self.used} > {self.budget} bytes"
        assert self.used == sum(c for _k, _r, c in self._order), "cache byte count drifted"
        queued = {(k, id(r)) for k, r, _c in self._order}
        assert all((k, id(r)) in queued for k, r in self._records.items()), "cache lost an entry"
