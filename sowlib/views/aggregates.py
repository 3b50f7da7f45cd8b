"""Aggregate states of views and aggregated queries: each takes ``add``/``remove`` of one value.

Sums are exact (integers, and floats as integer multiples of a power of two), so a state
maintained through any sequence of adds and removes answers exactly what a fresh
computation over the remaining values answers. Imports only ``expr.runtime`` and
``sortedcontainers``.
"""

from __future__ import annotations

import abc
import enum
import heapq
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from sortedcontainers import SortedKeyList

from sowlib.expr import runtime

__all__ = [
    "AGGREGATES",
    "Aggregate",
    "aggregate_number",
    "distinct_value",
    "exact_float",
]

#: Every finite float is an integer multiple of 2**-1074 (the smallest subnormal).
_SHIFT = 1074
#: The largest k for which _Moments keeps 2.0**k (a float up to 2**1023).
_FLOAT_SCALE = 1000


def aggregate_number(value: Any) -> int | float | None:
    """The number an aggregate sees: NULL, missing and non-numeric values give None.

    Numbers as they are, booleans as 0/1, numeric text converted as the filter
    language converts it (``"5"`` is 5), an array's first element.
    """
    v = runtime.first(value)
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return int(v)
    if t is str:
        return runtime.parse_number(v)
    return None


def exact_float(x: int | float) -> int:
    """``x * 2**1074`` as an exact integer (``x`` finite)."""
    if type(x) is int:
        return x << _SHIFT
    num, den = float(x).as_integer_ratio()
    return num << (_SHIFT + 1 - den.bit_length())  # den is a power of two


def _ratio(num: int, den: int) -> float:
    """``num / den`` correctly rounded (Python's int true division), inf past the range."""
    try:
        return num / den
    except OverflowError:
        return math.inf if (num > 0) == (den > 0) else -math.inf


class _NaN(enum.Enum):
    """NaN as one value (``nan != nan``, but COUNT_DISTINCT and grouping need one identity)."""

    NAN = "NaN"

    def __repr__(self) -> str:
        return "NaN"


def distinct_value(value: Any) -> Any:
    """The hashable identity COUNT_DISTINCT and grouping use for a value (None for NULL)."""
    v = runtime.normalize(value)
    if v is None:
        return None
    if type(v) is list:
        return tuple(distinct_value(x) for x in v)
    if type(v) is float and v != v:
        return _NaN.NAN
    return v


class Aggregate(abc.ABC):
    """One aggregate over one group: values come and go; ``value()`` is the result.

    Subclasses keep running state so that ``add``, ``remove`` and ``value`` cost
    O(1) (O(log n) for MIN and MAX). ``remove`` is only called with a value that
    was added.
    """

    #: turns a raw field value into what the state holds (None: skipped).
    convert: Callable[[Any], Any] = staticmethod(aggregate_number)
    #: What ``convert`` gives an int or a float that is not NaN: True when it gives
    #: True (COUNT), else the number itself (the write path's fast reading relies on it).
    numbers_count = False

    @abc.abstractmethod
    def add(self, v: Any) -> None:
        """Count ``v`` (a converted, non-None value) in."""

    @abc.abstractmethod
    def remove(self, v: Any) -> None:
        """Take one ``v`` that was added back out."""

    @abc.abstractmethod
    def value(self) -> Any:
        """The aggregate over the values now in (None: NULL)."""


class _Moments(Aggregate):
    """Count, exact sum and (for the deviations) exact sum of squares, plus the
    non-finite values seen. Integers are summed as they are; floats as exact integer
    multiples of ``2**-k``, ``k`` the finest binary exponent among the floats counted so
    far (at most 1074: every finite float is a multiple of ``2**-1074``), so the sums are
    integers no longer than the values need (prices with cents: about 100 bits)."""

    #: whether the sum of squares is kept (the deviations need it; SUM and AVG do not)
    squares = True

    def __init__(self) -> None:
        self.n = 0
        self.floats = 0  # how many of the values are floats (the result type of SUM)
        self.ints = 0  # the sum of the integer values
        self.k = 0  # the scale: 2**k times a float value is an integer, for every float in
        # 2.0**k while k <= _FLOAT_SCALE, else NaN: a float times it is v * 2**k exactly
        # (a power of two only moves the exponent; past the range it is inf, not an
        # integer), an integer exactly when v is a multiple of 2**-k
        self.scale = 1.0
        self.s1 = 0  # the sum of the finite float values * 2**k
        self.s2 = 0  # the sum of the squares of every finite value * 2**(2k)
        self.nan = 0
        self.pos_inf = 0
        self.neg_inf = 0

    def add(self, v: Any) -> None:
        self.n += 1
        if type(v) is int:
            self.ints += v
            if self.squares:
                x = v << self.k
                self.s2 += x * x
            return
        self.floats += 1
        y = v * self.scale
        if y.is_integer():  # v * 2**k exactly (see scale): a multiple of 2**-k
            x = int(y)
        else:
            if v - v != 0.0:  # inf or NaN
                self._odd(v, 1)
                return
            num, den = v.as_integer_ratio()  # den is 2**d
            d = den.bit_length() - 1
            if d > self.k:
                self._rescale(d)
            x = num << (self.k - d)
        self.s1 += x
        if self.squares:
            self.s2 += x * x

    def remove(self, v: Any) -> None:
        self.n -= 1
        if type(v) is int:
            self.ints -= v
            if self.squares:
                x = v << self.k
                self.s2 -= x * x
            return
        self.floats -= 1
        y = v * self.scale
        if y.is_integer():
            x = int(y)
        else:
            if v - v != 0.0:
                self._odd(v, -1)
                return
            num, den = v.as_integer_ratio()
            d = den.bit_length() - 1  # never above k: the value was added
            x = num << (self.k - d)
        self.s1 -= x
        if self.squares:
            self.s2 -= x * x

    def _rescale(self, k: int) -> None:
        """Make the scale the finer ``k`` (the sums shifted to it, exactly)."""
        up = k - self.k
        self.s1 <<= up
        self.s2 <<= 2 * up
        self.k = k
        self.scale = float(1 << k) if k <= _FLOAT_SCALE else math.nan

    def _odd(self, v: float, sign: int) -> None:
        """Count a non-finite value in or out."""
        if v != v:
            self.nan += sign
        elif v > 0:
            self.pos_inf += sign
        else:
            self.neg_inf += sign

    def _sum(self) -> int:
        """The sum of the finite values * 2**k."""
        return self.s1 + (self.ints << self.k)

    def _special(self) -> float | None:
        """The non-finite result, or None when every value is finite."""
        if self.nan or (self.pos_inf and self.neg_inf):
            return math.nan
        if self.pos_inf:
            return math.inf
        if self.neg_inf:
            return -math.inf
        return None

    def total(self) -> int | float | None:
        if self.n == 0:
            return None
        if self.nan or self.pos_inf or self.neg_inf:
            return self._special()
        if self.floats == 0:
            return self.ints
        k = self.k
        try:  # _ratio(self._sum(), 2**k), inline: the hot path of a watched view
            return (self.s1 + (self.ints << k)) / (1 << k)
        except OverflowError:
            return _ratio(self._sum(), 1 << k)

    def mean(self) -> float | None:
        if self.n == 0:
            return None
        special = self._special()
        return special if special is not None else _ratio(self._sum(), self.n << self.k)

    def stddev(self, sample: bool) -> float | None:
        n = self.n
        if n == 0 or (sample and n == 1):
            return None
        special = self._special()
        if special is not None:
            return math.nan
        s1 = self._sum()
        num = n * self.s2 - s1 * s1  # n² · variance_pop · 2**(2k)
        den = n * (n - 1 if sample else n)
        return math.sqrt(_ratio(num, den << (2 * self.k)))


class Sum(_Moments):
    """SUM: integers stay integers; any float makes the result a float."""

    squares = False
    value = _Moments.total  # the value itself: no call between (a watched view's hot path)


class Avg(_Moments):
    """AVG: the exact mean, correctly rounded to a float."""

    squares = False
    value = _Moments.mean


class StddevPop(_Moments):
    """STDDEV_POP: population standard deviation."""

    def value(self) -> Any:
        return self.stddev(sample=False)


class StddevSamp(_Moments):
    """STDDEV_SAMP: sample standard deviation (NULL for fewer than two values)."""

    def value(self) -> Any:
        return self.stddev(sample=True)


def _present(value: Any) -> Any:
    """COUNT's view of a value: anything non-NULL counts."""
    return None if runtime.is_null(value) else True


class Count(Aggregate):
    """COUNT(/x): the number of non-NULL values; COUNT(*): the number of records."""

    convert = staticmethod(_present)
    numbers_count = True

    def __init__(self) -> None:
        self.n = 0

    def add(self, v: Any) -> None:
        self.n += 1

    def remove(self, v: Any) -> None:
        self.n -= 1

    def value(self) -> Any:
        return self.n


class _Ordered(Aggregate):
    """MIN and MAX: the group's values in an ordered structure, ordered as ``order_by``
    orders mixed values (numbers and numeric text numerically, then other text
    byte-wise). NaN is skipped.

    While every value is a number: a binary heap (of ``sign * value``) whose removed
    values are counted by value and dropped when they reach the top, O(log n) each
    (the heap is rebuilt from its live values when the dead outnumber them). The
    first value of another type turns it into a list sorted by ``order_key``.
    """

    #: 1: the heap's top is the least value (MIN); -1: the greatest (MAX).
    sign = 1

    @staticmethod
    def convert(value: Any) -> Any:
        v = runtime.first(value)
        if v is None or (type(v) is float and v != v):
            return None
        return int(v) if type(v) is bool else v

    def __init__(self) -> None:
        self.heap: list[int | float] = []
        self.dead: dict[int | float, int] = {}  # removed values not yet popped, by value
        self.live = 0
        self.values: Any = None  # the sorted list, once a value is not a number

    def add(self, v: Any) -> None:
        if self.values is None:
            if type(v) is int or type(v) is float:
                heapq.heappush(self.heap, v if self.sign > 0 else -v)
                self.live += 1
                return
            self._to_sorted()
        self.values.add(v)

    def remove(self, v: Any) -> None:
        if self.values is not None:
            self.values.remove(v)
            return
        x = v if self.sign > 0 else -v
        dead = self.dead
        dead[x] = dead.get(x, 0) + 1
        self.live -= 1
        if len(self.heap) > 2 * self.live + 16:
            self.heap = self._alive()
            heapq.heapify(self.heap)
            self.dead = {}

    def _alive(self) -> list[int | float]:
        """The heap's entries less the dead ones (as the heap holds them)."""
        dead = dict(self.dead)
        keep = []
        for x in self.heap:
            n = dead.get(x)
            if n:
                dead[x] = n - 1
            else:
                keep.append(x)
        return keep

    def _to_sorted(self) -> None:
        sign = self.sign
        live = [x if sign > 0 else -x for x in self._alive()]
        self.values = SortedKeyList(live, key=runtime.order_key)
        self.heap, self.dead = [], {}

    def _top(self) -> Any:
        """The least (MIN) or greatest (MAX) value, None when there is none."""
        if self.values is not None:
            if not self.values:
                return None
            return self.values[0] if self.sign > 0 else self.values[-1]
        heap, dead = self.heap, self.dead
        while heap:
            x = heap[0]
            n = dead.get(x)
            if not n:
                return x if self.sign > 0 else -x
            if n == 1:
                del dead[x]
            else:
                dead[x] = n - 1
            heapq.heappop(heap)
        return None

    value = _top


class Min(_Ordered):
    """MIN over the group's values."""


class Max(_Ordered):
    """MAX over the group's values."""

    sign = -1


class CountDistinct(Aggregate):
    """COUNT_DISTINCT: how many different non-NULL values (1 and 1.0 are one value)."""

    convert = staticmethod(distinct_value)

    def __init__(self) -> None:
        self.counts: Counter[Any] = Counter()

    def add(self, v: Any) -> None:
        self.counts[v] += 1

    def remove(self, v: Any) -> None:
        left = self.counts[v] - 1
        if left:
            self.counts[v] = left
        else:
            del self.counts[v]

    def value(self) -> Any:
        return len(self.counts)


#: Aggregate function name -> state class.
AGGREGATES: dict[str, type[Aggregate]] = {
    "SUM": Sum,
    "COUNT": Count,
    "AVG": Avg,
    "MIN": Min,
    "MAX": Max,
    "STDDEV_POP": StddevPop,
    "STDDEV_SAMP": StddevSamp,
    "COUNT_DISTINCT": CountDistinct,
}
