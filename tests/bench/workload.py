"""The standard benchmark workload: seeded order messages and their renderings per codec.

Pure data generation for the benchmarks and ``report.py``; imports nothing from sowlib,
so the peers and sowlib are fed byte-identical input.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import attrs
import msgpack
import orjson

__all__ = [
    "FIX_TAGS",
    "KEYS",
    "MESSAGES",
    "ORDER_IDS",
    "REGIONS",
    "SEED",
    "SYMBOLS",
    "Sizes",
    "json_messages",
    "json_orders",
    "forget",
    "orders",
    "render",
    "to_fix",
    "to_json",
    "to_msgpack",
    "to_nvfix",
    "to_xml",
    "unique_orders",
]

#: Every workload is generated from this seed; change it and every number changes.
SEED = 20240301
#: Messages in the standard workload.
MESSAGES = 200_000
#: Distinct orderId values (each key is updated ~4 times in the standard workload).
ORDER_IDS = 50_000
#: Distinct symbols.
SYMBOLS = 500
REGIONS = ("EU", "APAC", "NA", "LATAM", "MEA", "UK", "JP", "CN")
_VENUES = ("XNAS", "XNYS", "XLON", "XPAR", "XTKS", "XHKG")
_STATUS = ("New", "PartiallyFilled", "Filled", "Replaced")
_BASE_TS = 1_700_000_000_000

#: FIX tag per order field (standard tags where one exists, user-defined 5000+ otherwise).
FIX_TAGS = {
    "orderId": "11",
    "customerId": "1",
    "symbol": "55",
    "price": "44",
    "qty": "38",
    "side": "54",
    "region": "5001",
    "venue": "100",
    "status": "5002",
    "currency": "15",
    "tif": "59",
    "ts": "60",
}

#: The SOW key path of the order id in each message type.
KEYS = {
    "json": "/orderId",
    "xml": "/Order/orderId",
    "fix": "/11",
    "nvfix": "/orderId",
    "msgpack": "/orderId",
}


@attrs.frozen
class Sizes:
    """How much work one report run does: ``standard`` (200k), ``million`` (1m), or a tenth."""

    name: str = "200k"
    messages: int = MESSAGES  # the publish stream: updates of ``order_ids`` existing keys
    order_ids: int = ORDER_IDS
    records: int = 50_000  # distinct records for reads, queries and refresh
    each: int = MESSAGES  # per-message publish, codecs, delta, compaction
    reopen: int = 1_000_000  # live records for the reopen targets
    readers: int = 1_000_000  # live records for the concurrent readers
    samples: int = 50  # queries or repeats per query-like target
    seconds: float = 5.0  # per configuration of the concurrent readers

    @property
    def symbols(self) -> int:
        """Distinct symbols in the read data: about 100 records per symbol."""
        return max(1, self.records // 100)

    @classmethod
    def full(cls) -> Sizes:
        """The standard sizes: 200,000 messages over 50,000 orderIds."""
        return cls()

    @classmethod
    def million(cls) -> Sizes:
        """1,000,000 messages over 250,000 orderIds; 1,000,000 records for reads."""
        return cls("1m", 1_000_000, 250_000, 1_000_000, MESSAGES, 1_000_000, 1_000_000, 10)

    @classmethod
    def named(cls, name: str) -> Sizes:
        """``"200k"`` or ``"1m"``."""
        sizes = {"200k": cls.full, "1m": cls.million}
        if name not in sizes:
            raise ValueError(f"unknown size {name!r}: expected one of {sorted(sizes)}")
        return sizes[name]()

    def quick(self) -> Sizes:
        """A tenth of these sizes (a smoke run); readers run 1 s per configuration."""
        return attrs.evolve(
            self,
            name=f"{self.name} --quick",
            messages=self.messages // 10,
            order_ids=self.order_ids // 10,
            records=self.records // 10,
            each=self.each // 10,
            reopen=self.reopen // 10,
            readers=self.readers // 10,
            samples=max(5, self.samples // 5),
            seconds=1.0,
        )


def _order(rng: random.Random, order_id: int, index: int, symbols: int) -> dict[str, Any]:
    return {
        "orderId": order_id,
        "customerId": f"CUST-{rng.randrange(10_000):05d}",
        "symbol": f"SYM{rng.randrange(symbols):03d}",
        "price": round(rng.uniform(1.0, 500.0), 2),
        "qty": rng.randrange(1, 10_000),
        "side": "B" if rng.random() < 0.5 else "S",
        "region": REGIONS[rng.randrange(len(REGIONS))],
        "venue": _VENUES[rng.randrange(len(_VENUES))],
        "status": _STATUS[rng.randrange(len(_STATUS))],
        "currency": "USD",
        "tif": "DAY",
        "ts": _BASE_TS + index * 7,
    }


@functools.lru_cache(maxsize=8)
def orders(
    n: int = MESSAGES, *, order_ids: int = ORDER_IDS, symbols: int = SYMBOLS, seed: int = SEED
) -> tuple[dict[str, Any], ...]:
    """``n`` order dicts; orderId drawn from ``order_ids`` values, so keys repeat (updates).

    The result is cached and shared: callers must not mutate the dicts.
    """
    rng = random.Random(seed)
    return tuple(_order(rng, rng.randrange(order_ids), i, symbols) for i in range(n))


@functools.lru_cache(maxsize=4)
def unique_orders(
    n: int, *, symbols: int = SYMBOLS, seed: int = SEED
) -> tuple[dict[str, Any], ...]:
    """``n`` orders with distinct orderIds 0..n-1 (every publish is an insert)."""
    rng = random.Random(seed + 1)
    return tuple(_order(rng, i, i, symbols) for i in range(n))


def to_json(order: dict[str, Any]) -> bytes:
    """Compact JSON (about 200 bytes per order); the same bytes as ``json.dumps``.

    Copied: a bytes object made by orjson keeps about 4 KiB of the process's memory
    resident (its allocation), so a million of them held at once would take 4 GiB.
    """
    return bytes(memoryview(orjson.dumps(order)))


def to_xml(order: dict[str, Any]) -> bytes:
    """``<Order><orderId>1</orderId>...</Order>``: one element per field."""
    body = "".join(f"<{k}>{v}</{k}>" for k, v in order.items())
    return f"<Order>{body}</Order>".encode()


def to_fix(order: dict[str, Any], sep: bytes = b"\x01") -> bytes:
    """FIX tag=value with numeric tags (:data:`FIX_TAGS`) and an SOH separator."""
    return b"".join(f"{FIX_TAGS[k]}={v}".encode() + sep for k, v in order.items())


def to_nvfix(order: dict[str, Any], sep: bytes = b"\x01") -> bytes:
    """NVFIX name=value with the JSON field names and an SOH separator."""
    return b"".join(f"{k}={v}".encode() + sep for k, v in order.items())


def to_msgpack(order: dict[str, Any]) -> bytes:
    """The order dict packed with msgpack."""
    return bytes(msgpack.packb(order))


_RENDERERS = {
    "json": to_json,
    "xml": to_xml,
    "fix": to_fix,
    "nvfix": to_nvfix,
    "msgpack": to_msgpack,
}


@functools.lru_cache(maxsize=16)
def render(
    message_type: str, n: int = MESSAGES, *, symbols: int = SYMBOLS, unique: bool = False
) -> tuple[bytes, ...]:
    """The workload's first ``n`` orders rendered as ``message_type`` (cached)."""
    fn = _RENDERERS[message_type]
    source = unique_orders(n, symbols=symbols) if unique else orders(n, symbols=symbols)
    return tuple(fn(o) for o in source)


@functools.lru_cache(maxsize=4)
def json_orders(
    n: int,
    *,
    order_ids: int | None = None,
    symbols: int = SYMBOLS,
    first_id: int = 0,
    seed: int = SEED,
) -> tuple[bytes, ...]:
    """``n`` compact JSON orders, keeping no dicts (for the million-record sizes).

    With ``order_ids`` the orderId is drawn from ``0..order_ids-1`` (keys repeat: updates);
    without, the orders have the distinct orderIds ``first_id..first_id+n-1``.
    """
    rng = random.Random(seed)
    dumps = to_json
    if order_ids is None:
        return tuple(dumps(_order(rng, first_id + i, i, symbols)) for i in range(n))
    return tuple(dumps(_order(rng, rng.randrange(order_ids), i, symbols)) for i in range(n))


def forget() -> None:
    """Drop every cached workload (the report calls it between scenarios)."""
    for fn in (orders, unique_orders, render, json_orders):
        fn.cache_clear()


def json_messages(n: int = MESSAGES, *, symbols: int = SYMBOLS) -> tuple[bytes, ...]:
    """The standard workload: ``n`` JSON messages as bytes."""
    return render("json", n, symbols=symbols)
