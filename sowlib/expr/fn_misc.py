"""Date/time, array, NULL-handling, constructor and context functions (spec §5.3, §5.6-§5.10).

Times are UTC. Imports only ``expr.runtime`` and ``expr.context``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
from typing import Any

from sowlib.expr.context import EvalContext
from sowlib.expr.runtime import (
    arith,
    elements,
    first,
    normalize,
    order_key,
    parse_number,
    text_of,
    to_number,
)

__all__ = [
    "array_count",
    "array_max",
    "array_min",
    "array_sum",
    "array_to_string",
    "char_value",
    "coalesce",
    "context_fn",
    "date_utc",
    "day",
    "month",
    "strftime",
    "strptime",
    "timestamp",
    "today_utc",
    "unix_timestamp",
    "year",
]

_UTC = dt.UTC
_ISO_BASIC = re.compile(r"(\d{8})T(\d{6})(?:\.(\d{1,6}))?Z?")


def timestamp(v: Any) -> float | None:
    """A timestamp argument: float UNIX seconds or ISO-8601 basic ``YYYYMMDDTHHMMSS[.f][Z]``."""
    v = first(v)
    if v is None:
        return None
    if isinstance(v, str):
        n = parse_number(v)
        if n is None:
            m = _ISO_BASIC.fullmatch(v)
            if m is None:
                return None
            try:
                when = dt.datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S")
            except ValueError:
                return None
            frac = int((m.group(3) or "0").ljust(6, "0"))
            return when.replace(tzinfo=_UTC).timestamp() + frac / 1e6
        v = n
    f = float(v)
    return f if math.isfinite(f) else None


def _utc(ts: float) -> dt.datetime | None:
    try:
        return dt.datetime.fromtimestamp(ts, _UTC)
    except (OverflowError, OSError, ValueError):
        return None


def strptime(text: str, fmt: str) -> float | None:
    """Parse ``text`` with a strptime format (UTC; ``%f`` and ``%03f`` accepted)."""
    try:
        when = dt.datetime.strptime(text, fmt.replace("%03f", "%f"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_UTC)
    return when.timestamp()


def strftime(fmt: str, ts: Any) -> str | None:
    """Format a timestamp (UTC); ``%f`` microseconds, ``%03f`` milliseconds; <= 128 bytes."""
    seconds = timestamp(ts)
    when = None if seconds is None else _utc(seconds)
    if when is None:
        return None
    fmt = fmt.replace("%%", "\0").replace("%03f", f"{when.microsecond // 1000:03d}")
    try:
        out = when.strftime(fmt.replace("\0", "%%"))
    except ValueError:
        return None
    raw = out.encode("utf-8", "surrogateescape")[:128]
    return raw.decode("utf-8", "surrogateescape")


def _part(ts: Any, name: str) -> int | None:
    seconds = timestamp(ts)
    when = None if seconds is None else _utc(seconds)
    return None if when is None else int(getattr(when, name))


def year(ts: Any) -> int | None:
    return _part(ts, "year")


def month(ts: Any) -> int | None:
    return _part(ts, "month")


def day(ts: Any) -> int | None:
    return _part(ts, "day")


def date_utc(ts: Any) -> float | None:
    """Midnight UTC of the timestamp's day, as UNIX seconds."""
    seconds = timestamp(ts)
    if seconds is None:
        return None
    return float(math.floor(seconds / 86400) * 86400)


def unix_timestamp(ctx: EvalContext | None) -> float:
    if ctx is not None and ctx.now is not None:
        return float(ctx.now)
    return time.time()


def today_utc(ctx: EvalContext | None) -> float:
    now = unix_timestamp(ctx)
    return float(math.floor(now / 86400) * 86400)


def context_fn(field: str) -> Any:
    """A context function returning ``ctx.<field>`` (NULL when absent)."""

    def read(ctx: EvalContext | None) -> Any:
        if ctx is None:
            return None
        value = getattr(ctx, field)
        if value is None and field == "bookmark":
            value = ctx.seq
        if value is None and field == "sow_key_hash":
            value = ctx.sow_key
        return normalize(value)

    read.__name__ = field
    return read


def array_count(arr: Any) -> int:
    return len(arr) if isinstance(arr, list) else 1


def array_sum(arr: Any) -> int | float | None:
    total: int | float | None = None
    for item in elements(arr):
        total = to_number(item) if total is None else arith("+", total, item)
    return total


def _extreme(arr: Any, pick: Any) -> Any:
    items = [x for x in elements(arr) if not (isinstance(x, float) and x != x)]
    return pick(items, key=order_key) if items else None


def array_max(arr: Any) -> Any:
    return _extreme(arr, max)


def array_min(arr: Any) -> Any:
    return _extreme(arr, min)


def array_to_string(arr: Any, delim: str | None, null_text: str | None) -> str:
    items = arr if isinstance(arr, list) else [arr]
    parts = [text_of(x) for x in items]
    return (delim or "").join(null_text or "" if p is None else p for p in parts)


def coalesce(*args: Any) -> Any:
    for a in args:
        v = first(a)
        if v is not None:
            return v
    return None


def char_value(n: int | float) -> str | None:
    if isinstance(n, float):
        if not n.is_integer():
            return None
        n = int(n)
    if not 0 <= n <= 255:
        return None
    return bytes([n]).decode("utf-8", "surrogateescape")
