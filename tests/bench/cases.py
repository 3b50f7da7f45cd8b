"""Query and filter cases shared by the pytest benchmarks and ``report.py``.

Each case pairs an AMPS filter with the same predicate in SQL over ``json_extract``.
Imports nothing from sowlib.
"""

from __future__ import annotations

import random

from workload import REGIONS, SEED

__all__ = [
    "PREDICATE",
    "PREDICATE_SQL",
    "SCAN_FILTER",
    "SCAN_SQL",
    "clause_filter",
    "price_ranges",
    "symbol_values",
]

#: The filter-language target's predicate.
PREDICATE = "(/price > 100 AND /side = 'B') OR /region IN ('EU','APAC')"
#: The same predicate for sqlite3.
PREDICATE_SQL = (
    "(json_extract(doc, '$.price') > 100 AND json_extract(doc, '$.side') = 'B')"
    " OR json_extract(doc, '$.region') IN ('EU','APAC')"
)

#: A filter no declared index serves that matches about 40% of the orders
#: (qty uniform on 1..9999, side B/S, region one of 8).
SCAN_FILTER = "(/qty > 6000 AND /side = 'B') OR /region IN ('EU','APAC')"
#: The same filter for sqlite3.
SCAN_SQL = (
    "(json_extract(doc, '$.qty') > 6000 AND json_extract(doc, '$.side') = 'B')"
    " OR json_extract(doc, '$.region') IN ('EU','APAC')"
)

_FIELDS = ("/price", "/qty", "/symbol", "/region", "/side", "/customerId", "/ts")


def clause_filter(clauses: int = 20, *, variant: int = 0, like: bool = True) -> str:
    """A filter of ``clauses`` comparisons joined by AND/OR; ``variant`` changes constants.

    Every seventh clause is a ``LIKE`` on /symbol (an equality instead when ``like`` is off).
    """
    rng = random.Random(SEED + variant)
    parts = []
    for i in range(clauses):
        field = _FIELDS[i % len(_FIELDS)]
        if field in ("/price", "/qty", "/ts"):
            op = ("<", ">", "<=", ">=", "=", "<>")[rng.randrange(6)]
            parts.append(f"{field} {op} {rng.randrange(1, 1000)}")
        elif field == "/region":
            parts.append(f"{field} IN ('{REGIONS[rng.randrange(8)]}', 'NA')")
        elif field == "/symbol" and like:
            parts.append(f"{field} LIKE '^SYM{rng.randrange(100):02d}'")
        else:
            parts.append(f"{field} = 'V{rng.randrange(1000)}'")
    text = parts[0]
    for i, part in enumerate(parts[1:]):
        text += (" AND " if i % 3 else " OR ") + part
    return text


def symbol_values(symbols: int, count: int) -> list[str]:
    """``count`` symbols to look up, drawn from ``symbols`` distinct ones (seeded)."""
    rng = random.Random(SEED + 2)
    return [f"SYM{rng.randrange(symbols):03d}" for _ in range(count)]


def price_ranges(count: int, width: float = 5.0) -> list[tuple[float, float]]:
    """``count`` price windows of ``width`` (about 1% of prices uniform on 1..500)."""
    rng = random.Random(SEED + 3)
    out = []
    for _ in range(count):
        low = round(rng.uniform(1.0, 500.0 - width), 2)
        out.append((low, round(low + width, 2)))
    return out
