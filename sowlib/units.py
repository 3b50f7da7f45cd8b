"""AMPS units: durations (``30s``, ``5m``, ``1d``), byte sizes (``1MB``) and counts (``10k``).

Imports only ``errors``.
"""

from __future__ import annotations

import re

from sowlib.errors import ConfigError

__all__ = ["parse_count", "parse_duration", "parse_size"]

_DURATION = {
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_SIZE = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
}
_COUNT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_NUMBER_UNIT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*\Z")


def _split(value: str, what: str, where: str) -> tuple[float, str]:
    m = _NUMBER_UNIT.match(value)
    if not m:
        raise ConfigError(where, f"{value!r} is not a {what}")
    return float(m.group(1)), m.group(2).lower()


def parse_duration(value: str | float | int, where: str = "duration") -> float:
    """Return seconds for ``"30s"``, ``"5m"``, ``"1d"``, ``"250ms"`` or a bare number.

    A bare number means seconds ([R] spec §14.3).

    Example:
        >>> parse_duration("5m")
        300.0
    Raises:
        ConfigError: not a non-negative duration.
    """
    if isinstance(value, bool):
        raise ConfigError(where, f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value < 0 or value != value:
            raise ConfigError(where, f"{value!r} is not a non-negative duration")
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(where, f"{value!r} is not a duration")
    number, unit = _split(value, "duration", where)
    if unit == "":
        return number
    if unit not in _DURATION:
        raise ConfigError(
            where, f"unknown duration unit {unit!r} in {value!r} (ns us ms s m h d w)"
        )
    return number * _DURATION[unit]


def parse_size(value: str | int, where: str = "size") -> int:
    """Return bytes for ``"1MB"``, ``"512kb"``, ``"2G"`` or a bare integer.

    Example:
        >>> parse_size("1MB")
        1048576
    Raises:
        ConfigError: not a byte size.
    """
    if isinstance(value, bool):
        raise ConfigError(where, f"{value!r} is not a byte size")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(where, f"{value!r} is negative")
        return value
    if not isinstance(value, str):
        raise ConfigError(where, f"{value!r} is not a byte size")
    number, unit = _split(value, "byte size", where)
    if unit not in _SIZE:
        raise ConfigError(where, f"unknown size unit {unit!r} in {value!r} (kb mb gb tb)")
    return int(number * _SIZE[unit])


def parse_count(value: str | int, where: str = "count") -> int:
    """Return an integer for ``"10k"`` (10³), ``"10M"`` (10⁶) or a bare integer."""
    if isinstance(value, bool):
        raise ConfigError(where, f"{value!r} is not a count")
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise ConfigError(where, f"{value!r} is not a count")
    number, unit = _split(value, "count", where)
    if unit not in _COUNT:
        raise ConfigError(where, f"unknown count suffix {unit!r} in {value!r}")
    return int(number * _COUNT[unit])
