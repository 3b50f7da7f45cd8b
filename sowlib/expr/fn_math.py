"""Numeric and geospatial function implementations (spec §5.4, §5.7).

Arguments arrive as numbers (``int``/``float``; NaN for non-numeric text);
domain errors give NaN and poles give IEEE infinities, never exceptions.
Imports only ``expr.operators`` and ``expr.runtime``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from sowlib.expr.operators import I64_MIN, U64_MAX
from sowlib.expr.runtime import first, parse_number

__all__ = [
    "abs_",
    "ceiling",
    "floor",
    "float_fn",
    "geo_distance",
    "greatest",
    "least",
    "power",
    "round_",
    "sign",
    "width_bucket",
]

_NAN = float("nan")
_EARTH_RADIUS_M = 6_371_008.8  # mean radius: one degree on the equator is ~111.2 km


def _wrap(n: int) -> int:
    if I64_MIN <= n <= U64_MAX:
        return n
    return ((n - I64_MIN) % (U64_MAX + 1)) + I64_MIN


def abs_(x: int | float) -> int | float:
    if isinstance(x, int):
        return _wrap(abs(x)) if x != I64_MIN else I64_MIN
    return abs(x)


def _integral(f: Callable[[float], int], x: int | float) -> int | float:
    if isinstance(x, int) or not math.isfinite(x):
        return x
    return f(x)


def ceiling(x: int | float) -> int | float:
    return _integral(math.ceil, x)


def floor(x: int | float) -> int | float:
    return _integral(math.floor, x)


def round_(x: int | float, places: int | float = 0) -> int | float | None:
    """Round half away from zero to ``places`` decimals (negative: left of the point)."""
    if isinstance(places, float):
        if not math.isfinite(places):
            return None
        places = int(places)
    if isinstance(x, int):
        if places >= 0:
            return x
        q = 10 ** min(-places, 40)
        r = (abs(x) + q // 2) // q * q
        return _wrap(-r if x < 0 else r)
    if not math.isfinite(x):
        return x
    try:
        exp = Decimal(1).scaleb(-places)
        return float(Decimal(repr(x)).quantize(exp, rounding=ROUND_HALF_UP))
    except InvalidOperation:
        return x  # more places than a float holds: already exact


def _numbers(args: tuple[Any, ...]) -> list[int | float]:
    out: list[int | float] = []
    for a in args:
        v = first(a)
        if isinstance(v, str):
            v = parse_number(v)
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, int | float) and v == v:
            out.append(v)
    return out


def greatest(*args: Any) -> int | float:
    nums = _numbers(args)
    return max(nums) if nums else _NAN


def least(*args: Any) -> int | float:
    nums = _numbers(args)
    return min(nums) if nums else _NAN


def power(b: int | float, e: int | float) -> float:
    try:
        return math.pow(b, e)
    except OverflowError:
        return math.inf
    except ValueError:
        return _NAN if b != 0 else math.inf


def _ln(x: float) -> float:
    if x == 0:
        return -math.inf
    return math.log(x)


def _cot(x: float) -> float:
    t = math.tan(x)
    return math.inf if t == 0 else 1.0 / t


_FLOAT_FNS: dict[str, Callable[[float], float]] = {
    "SQRT": math.sqrt,
    "EXP": math.exp,
    "LN": _ln,
    "LOG2": lambda x: -math.inf if x == 0 else math.log2(x),
    "LOG10": lambda x: -math.inf if x == 0 else math.log10(x),
    "SIN": math.sin,
    "COS": math.cos,
    "TAN": math.tan,
    "COT": _cot,
    "ASIN": math.asin,
    "ACOS": math.acos,
    "ATAN": math.atan,
    "SINH": math.sinh,
    "COSH": math.cosh,
    "TANH": math.tanh,
    "RADIANS": math.radians,
    "DEGREES": math.degrees,
}


def float_fn(name: str) -> Callable[[int | float], float]:
    """The one-argument float function ``name``, with NaN for domain errors."""
    fn = _FLOAT_FNS[name]

    def call(x: int | float) -> float:
        try:
            return fn(float(x))
        except OverflowError:
            return math.inf
        except ValueError:
            return _NAN

    call.__name__ = name.lower()
    return call


def atan2(y: int | float, x: int | float) -> float:
    return math.atan2(y, x)


def sign(x: int | float) -> int | float:
    if x != x:
        return x
    return (x > 0) - (x < 0)


def width_bucket(x: int | float, low: int | float, high: int | float, n: Any) -> int | None:
    """Bucket 1..n over [low, high); 0 below, n + 1 at or above ([R] 15)."""
    if isinstance(n, float):
        if not math.isfinite(n):
            return None
        n = int(n)
    if n <= 0 or low == high or any(v != v for v in (x, low, high)):
        return None
    if low < high:
        if x < low:
            return 0
        if x >= high:
            return int(n) + 1
        return int((x - low) * n // (high - low)) + 1
    if x > low:
        return 0
    if x <= high:
        return int(n) + 1
    return int((low - x) * n // (low - high)) + 1


def geo_distance(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance in metres between two points given in decimal degrees."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))
