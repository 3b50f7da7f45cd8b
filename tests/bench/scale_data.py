"""Data, queries and the sqlite3 peer of the scale benchmark (``scale_report.py``).

N distinct JSON orders of about 230 bytes, generated in seeded chunks (each chunk has
its own generator, so any process regenerates the same bytes without holding them),
the three queries in both languages, and the sqlite3 table that holds the same data.
Imports nothing from sowlib.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

__all__ = [
    "CHUNK",
    "EQ_FILTER",
    "EQ_SQL",
    "PRICE_RANGE",
    "RANGE_FILTER",
    "RANGE_SQL",
    "SCAN_FILTER",
    "SCAN_SQL",
    "SEED",
    "SQL_LOOKUP",
    "SYMBOL",
    "SYMBOLS",
    "chunks",
    "lookup_keys",
    "rss_anon",
    "rss_anon_of",
    "sql_build",
    "sql_connect",
    "sql_insert",
    "sql_query",
]

SEED = 20261124
#: Messages per ``publish_many`` / ``executemany`` call.
CHUNK = 10_000
#: Distinct symbols.
SYMBOLS = 500
#: The symbol the equality query asks for (about 1/500 of the records).
SYMBOL = "SYM042"
#: The price range of the range query: prices are uniform on 1..500, so about 1%.
PRICE_RANGE = (250.0, 255.0)

EQ_FILTER = f"/symbol = '{SYMBOL}'"
RANGE_FILTER = f"/price BETWEEN {PRICE_RANGE[0]} AND {PRICE_RANGE[1]}"
#: No index covers it: both engines look at every record.
SCAN_FILTER = "/qty = 7 AND /side = 'B'"

EQ_SQL = ("json_extract(doc, '$.symbol') = ?", (SYMBOL,))
RANGE_SQL = ("json_extract(doc, '$.price') BETWEEN ? AND ?", PRICE_RANGE)
SCAN_SQL = ("json_extract(doc, '$.qty') = ? AND json_extract(doc, '$.side') = ?", (7, "B"))
SQL_LOOKUP = "SELECT doc FROM t WHERE orderId = ?"

_REGIONS = ("EMEA", "APAC", "NA", "LATAM")
_VENUES = ("XNAS", "XNYS", "XLON", "XPAR", "XTKS", "XHKG", "BATS", "ARCA")
_STATUS = ("New", "PartiallyFilled", "Filled", "Replaced")
_BASE_TS = 1_700_000_000_000
_TEMPLATE = (
    '{"orderId":%d,"symbol":"SYM%03d","price":%.2f,"qty":%d,"side":"%s",'
    '"account":"ACC-%06d","trader":"TR%04d","region":"%s","venue":"%s",'
    '"status":"%s","currency":"USD","tif":"DAY","ordType":"LIMIT","ts":%d}'
)


def _chunk(n: int, index: int, size: int) -> list[bytes]:
    rng = random.Random(f"{SEED}:{index}")
    start = index * size
    rand, bits = rng.random, rng.getrandbits
    return [_render(order_id, rand(), bits(64)) for order_id in range(start, min(n, start + size))]


def _render(order_id: int, price: float, r: int) -> bytes:
    # One 64-bit draw gives every discrete field (mixed radix; the bias is negligible).
    r, symbol = divmod(r, SYMBOLS)
    r, qty = divmod(r, 10_000)
    r, side = divmod(r, 2)
    r, account = divmod(r, 100_000)
    r, trader = divmod(r, 2_000)
    r, region = divmod(r, 4)
    r, venue = divmod(r, 8)
    status = r % 4
    return (
        _TEMPLATE
        % (
            order_id,
            symbol,
            1.0 + price * 499.0,
            qty + 1,
            "BS"[side],
            account,
            trader,
            _REGIONS[region],
            _VENUES[venue],
            _STATUS[status],
            _BASE_TS + order_id * 7,
        )
    ).encode()


def chunks(n: int, size: int = CHUNK) -> Iterator[list[bytes]]:
    """The ``n`` orders (orderId 0..n-1, each once) as lists of ``size`` JSON messages."""
    for index in range((n + size - 1) // size):
        yield _chunk(n, index, size)


def lookup_keys(n: int, count: int, seed: int = SEED) -> list[int]:
    """``count`` orderIds drawn uniformly (with repeats) from ``0..n-1``."""
    rng = random.Random(seed + 7)
    return [rng.randrange(n) for _ in range(count)]


def rss_anon() -> int:
    """This process's anonymous resident memory in bytes (``RssAnon`` of /proc/self/status)."""
    return rss_anon_of("self")


def rss_anon_of(pid: int | str) -> int:
    """``RssAnon`` of process ``pid`` in bytes (0 when it is gone or unknown)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS t(orderId INTEGER PRIMARY KEY, doc TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS t_symbol ON t(json_extract(doc, '$.symbol'))",
    "CREATE INDEX IF NOT EXISTS t_price ON t(json_extract(doc, '$.price'))",
)
_UPSERT = (
    "INSERT INTO t(orderId, doc) VALUES (json_extract(?1, '$.orderId'), ?1)"
    " ON CONFLICT(orderId) DO UPDATE SET doc = excluded.doc"
)


def sql_connect(path: str, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection as an application would open one (WAL, ``synchronous=NORMAL``).

    sqlite3 reads nothing until the first statement, so the caller runs one to
    measure an honest open.
    """
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def sql_build(conn: sqlite3.Connection) -> None:
    """The table and its two expression indexes (created first: maintained on insert)."""
    for statement in _SCHEMA:
        conn.execute(statement)


def sql_insert(conn: sqlite3.Connection, chunk: list[bytes]) -> None:
    """Upsert one chunk with one ``executemany`` in one transaction."""
    conn.execute("BEGIN")
    conn.executemany(_UPSERT, [(m.decode(),) for m in chunk])
    conn.execute("COMMIT")


def sql_query(conn: sqlite3.Connection, where: tuple[str, tuple[object, ...]]) -> list[str]:
    """``SELECT doc FROM t WHERE <where>``: every matching document."""
    return [row[0] for row in conn.execute(f"SELECT doc FROM t WHERE {where[0]}", where[1])]
