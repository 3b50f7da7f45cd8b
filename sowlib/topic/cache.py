"""A bounded cache of hot Records (with their documents once decoded), by byte budget.

Imports only ``record`` and ``index.types``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from sowlib.index.types import Key
from sowlib.record import Record

__all__ = ["DEFAULT_CACHE_BYTES", "RecordCache", "record_cost"]

#: The default budget of a topic's record cache.
DEFAULT_CACHE_BYTES = 8 << 20

# What a cached Record costs beside its payload: the tuple, its fields, the dict
# slot. A decoded JSON-like document takes several times its text in objects.
_RECORD_OVERHEAD = 240
_DOC_FACTOR = 6


def record_cost(payload_len: int, decoded: bool) -> int:
    """Bytes a cached Record of a ``payload_len``-byte message is charged."""
    return _RECORD_OVERHEAD + payload_len * (1 + _DOC_FACTOR if decoded else 1)


class RecordCache:
    """``key -> Record``, least recently inserted first out, never over ``budget`` bytes.

    Reads (:meth:`get`) are one dict lookup and safe without the topic's lock;
    writes happen under it. A budget of 0 disables the cache. O(1) per operation.

    Example:
        >>> cache = RecordCache(1 << 20)
        >>> cache.budget
        1048576
    """

    __slots__ = ("_costs", "_records", "budget", "get", "used")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._records: dict[Key, Record] = {}
        # Insertion order, oldest first: an OrderedDict pops its first item in O(1)
        # (a plain dict's first item is found by skipping the slots of earlier deletes).
        self._costs: OrderedDict[Key, int] = OrderedDict()
        #: ``get(key)``: the cached Record of ``key``, or None; O(1). The dict's own
        #: method: a read by key is one C call.
        self.get: Callable[[Key], Record | None] = self._records.get

    def put(self, key: Key, rec: Record, cost: int) -> None:
        """Cache ``rec`` (charged ``cost`` bytes), evicting the oldest entries first."""
        if cost > self.budget:
            self.drop(key)
            return
        costs, records = self._costs, self._records
        old = costs.pop(key, None)
        if old is not None:
            del records[key]
            self.used -= old
        self.used += cost
        while self.used > self.budget:
            victim, victim_cost = costs.popitem(last=False)
            self.used -= victim_cost
            del records[victim]
        records[key] = rec
        costs[key] = cost

    def drop(self, key: Key) -> None:
        """Forget ``key`` (absent is fine); O(1)."""
        cost = self._costs.pop(key, None)
        if cost is not None:
            del self._records[key]
            self.used -= cost

    def clear(self) -> None:
        """Forget everything."""
        self._records.clear()
        self._costs.clear()
        self.used = 0

    def __len__(self) -> int:
        return len(self._records)

    def check(self) -> None:
        """Assert the invariants: within budget, the charged bytes add up."""
        assert self.used <= self.budget, f"cache holds {self.used} > {self.budget} bytes"
        assert self.used == sum(self._costs.values()), "cache byte count drifted"
        assert self._records.keys() == self._costs.keys(), "cache maps disagree"
