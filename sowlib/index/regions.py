"""Where a test on one field may be met, as a memo index sees it: intervals of values
on its numeric and text axes (spec §2.4). Imports only attrs.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["ALL", "Interval", "Region"]

_Bound = Any  # a number for the numeric axis, a str for the text axis


@attrs.frozen
class Interval:
    """``lo .. hi`` with inclusive flags; ``None`` bounds are open-ended."""

    lo: _Bound = None
    hi: _Bound = None
    lo_inc: bool = True
    hi_inc: bool = True
    #: When set the text interval is "every string starting with prefix".
    prefix: str | None = None

    def intersect(self, other: Interval) -> Interval | None:
        """The overlap of two intervals on one axis; None when empty.

        A prefix interval is kept as it is (a superset of the overlap).
        """
        if self.prefix is not None or other.prefix is not None:
            return self if self.prefix is not None else other
        lo, lo_inc = _tighter(self.lo, self.lo_inc, other.lo, other.lo_inc, upper=False)
        hi, hi_inc = _tighter(self.hi, self.hi_inc, other.hi, other.hi_inc, upper=True)
        if (
            lo is not None
            and hi is not None
            and (lo > hi or (lo == hi and not (lo_inc and hi_inc)))
        ):
            return None
        return Interval(lo, hi, lo_inc, hi_inc)


def _tighter(a: _Bound, a_inc: bool, b: _Bound, b_inc: bool, upper: bool) -> tuple[_Bound, bool]:
    """The tighter of two lower (or upper) bounds."""
    if a is None:
        return b, b_inc
    if b is None or (a == b and a_inc <= b_inc):
        return a, a_inc
    if a == b:
        return b, b_inc
    return (a, a_inc) if (a < b) == upper else (b, b_inc)


ALL = Interval()


@attrs.frozen
class Region:
    """Where in a memo index the values that may satisfy a test live.

    ``nums`` covers true numbers (and, with ``by_value``, numeric strings by
    their value: they compare numerically with a number literal), ``texts``
    covers every string by its bytes, ``words`` adds every non-numeric string
    (they compare above all numbers, spec §2.4 row 5). ``multi`` adds records
    holding several values, needed when two tests were intersected. ``exact``
    means every non-loose value found satisfies the test itself.
    """

    nums: Interval | None = None
    texts: Interval | None = None
    words: bool = False
    multi: bool = False
    by_value: bool = False
    exact: bool = True

    def intersect(self, other: Region, multi: bool = True) -> Region:
        """A region covering values that satisfy both tests.

        With ``multi`` (the tests may be met by different array elements)
        records holding several values are always included.
        """
        nums = self.nums.intersect(other.nums) if self.nums and other.nums else None
        words = self.words and other.words
        if self.texts is not None and other.texts is not None:
            texts = self.texts.intersect(other.texts)
        elif words:
            texts = None
        else:
            # A numeric string can meet a string bound byte-wise and a number
            # bound numerically, so with one text side keep all of that side
            # (it also covers the non-numeric strings a ``words`` side allows).
            texts = self.texts if self.texts is not None else other.texts
        multi = multi or self.multi or other.multi
        same_kind = self.by_value == other.by_value
        exact = self.exact and other.exact and same_kind and not multi
        return Region(nums, texts, words, multi, self.by_value or other.by_value, exact)
