"""Where an interval of values falls in a :class:`~sowlib.index.sortedmap.SortedMap`:
its positions, its values and how many entries they hold. The memo index's reads of
one sorted part; imports only the index's ``sortedmap`` and ``regions``.
"""

from __future__ import annotations

from typing import Any

from sowlib.index.regions import Interval
from sowlib.index.sortedmap import SortedMap

__all__ = ["count_in", "span", "values_in"]


def span(sd: SortedMap, iv: Interval) -> tuple[int, int]:
    """Positions ``lo, hi`` of the values of ``sd`` inside ``iv``; O(log n)."""
    sl = sd.ordered()
    if iv.prefix is not None:
        # Strings sharing a prefix are contiguous and start at the prefix itself.
        lo = sl.bisect_left(iv.prefix)
        hi = sl.bisect_left(iv.prefix + "\U0010ffff")
        return lo, max(lo, hi)
    lo = 0 if iv.lo is None else (sl.bisect_left if iv.lo_inc else sl.bisect_right)(iv.lo)
    hi = len(sl) if iv.hi is None else (sl.bisect_right if iv.hi_inc else sl.bisect_left)(iv.hi)
    return lo, max(lo, hi)


def values_in(sd: SortedMap, iv: Interval) -> list[Any]:
    """The values of ``sd`` inside ``iv``, in order; O(log n + k)."""
    if iv.prefix is not None:
        # Strings sharing a prefix are contiguous and start at the prefix itself.
        sl = sd.ordered()
        out = []
        for k in sl.islice(sl.bisect_left(iv.prefix)):
            if not k.startswith(iv.prefix):
                break
            out.append(k)
        return out
    lo, hi = span(sd, iv)
    return list(sd.ordered()[lo:hi]) if lo < hi else []


def count_in(sd: SortedMap, iv: Interval, entries: int) -> int:
    """Entries under the values of ``sd`` in ``iv``: exact for <= 64 values; O(log n)."""
    lo, hi = span(sd, iv)
    if hi - lo <= 64:
        return sum(len(sd.map[v]) for v in sd.ordered()[lo:hi])
    return (hi - lo) * entries // len(sd) + 1
