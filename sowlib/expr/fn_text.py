"""String and checksum function implementations (spec §5.1, §5.2, §5.4 MD5, §5.5).

Strings are byte strings: positions, lengths and case folding work on the
UTF-8 bytes (ASCII only for case). Arguments arrive already converted by the
registry (text or number, NULL handled). Imports only ``expr.like``.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import regex

from sowlib.expr import like

__all__ = [
    "concat",
    "crc32c",
    "crc64",
    "instr",
    "instr_i",
    "left",
    "length",
    "lower",
    "ltrim",
    "md5",
    "regexp_replace",
    "replace",
    "reverse",
    "right",
    "rtrim",
    "strequal_i",
    "substr",
    "trim",
    "upper",
]


def _b(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _int(n: Any) -> int | None:
    """An integer argument (position, count); None for NaN/inf."""
    if isinstance(n, float):
        if not math.isfinite(n):
            return None
        return int(n)
    return int(n)


def instr(s: str, sub: str) -> int:
    if s.isascii() and sub.isascii():
        return s.find(sub) + 1
    return _b(s).find(_b(sub)) + 1


def instr_i(s: str, sub: str) -> int:
    return _b(s).lower().find(_b(sub).lower()) + 1


def strequal_i(a: str, b: str) -> bool:
    return _b(a).lower() == _b(b).lower()


def length(s: str) -> int:
    return len(s) if s.isascii() else len(_b(s))


def concat(*parts: str | None) -> str:
    return "".join(p for p in parts if p is not None)


def upper(s: str) -> str:
    return s.upper() if s.isascii() else _s(_b(s).upper())


def lower(s: str) -> str:
    return s.lower() if s.isascii() else _s(_b(s).lower())


def replace(s: str | None, find: str | None, repl: str | None) -> str | None:
    if s is None:
        return None
    if find is None:
        return s
    return s.replace(find, repl or "")


def regexp_replace(s: str | None, pattern: str | None, repl: str | None) -> str | None:
    if s is None:
        return None
    if pattern is None:
        return s
    try:
        return like.regexp_replace(s, pattern, repl or "")
    except regex.error:
        return None  # a computed pattern that is not a regex; literal ones fail at parse


def substr(s: str, start: Any, count: Any = None) -> str | None:
    b = _b(s)
    st = _int(start)
    if st is None:
        return None
    size = len(b)
    i = st - 1 if st > 0 else (size + st if st < 0 else 0)
    i = max(i, 0)
    if i >= size:
        return None
    if count is None:
        return _s(b[i:])
    n = _int(count)
    if n is None or n <= 0:
        return None
    return _s(b[i : i + n])


def left(s: str, count: Any) -> str | None:
    n = _int(count)
    if n is None or n <= 0:
        return None
    return _s(_b(s)[:n])


def right(s: str, count: Any) -> str | None:
    n = _int(count)
    if n is None or n <= 0:
        return None
    return _s(_b(s)[-n:])


def trim(s: str, chars: str | None = None) -> str:
    return s.strip(chars or " ")


def ltrim(s: str, chars: str | None = None) -> str:
    return s.lstrip(chars or " ")


def rtrim(s: str, chars: str | None = None) -> str:
    return s.rstrip(chars or " ")


def reverse(s: str) -> str:
    return s[::-1] if s.isascii() else _s(_b(s)[::-1])


def md5(s: str) -> str:
    return hashlib.md5(_b(s), usedforsecurity=False).hexdigest()


def _table(poly: int, width: int) -> tuple[int, ...]:
    out = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        out.append(crc & ((1 << width) - 1))
    return tuple(out)


_CRC32C = _table(0x82F63B78, 32)  # Castagnoli, reflected
_CRC64 = _table(0x95AC9329AC4BC9B5, 64)  # the polynomial of spec §5.5, reflected


def crc32c(s: str | None) -> int:
    """CRC-32C (init and final XOR 0xFFFFFFFF); NULL hashes as the empty input."""
    crc = 0xFFFFFFFF
    for byte in _b(s or ""):
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc64(s: str | None) -> int:
    """Reflected CRC-64 with polynomial 0x95AC9329AC4BC9B5, init 0, no final XOR."""
    crc = 0
    for byte in _b(s or ""):
        crc = _CRC64[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc
