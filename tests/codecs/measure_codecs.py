"""Decode + encode cost per ~200-byte message for every codec (a script, not a test).

Run: ``python tests/codecs/measure_codecs.py``. Prints the best of several runs in µs.
"""

from __future__ import annotations

import time
import timeit
from typing import Any

from sowlib.codecs import get_codec

ORDER: dict[str, Any] = {
    "orderId": 12345,
    "symbol": "AAPL",
    "price": 187.25,
    "qty": 100,
    "side": "B",
    "region": "EU",
    "trader": {"id": 77, "name": "Rosa"},
    "tags": ["a", "b"],
    "ts": "20240301T090000Z",
    "note": "hello world, a short free-text note",
}
SAMPLES: dict[str, Any] = {
    "json": ORDER,
    "msgpack": ORDER,
    "xml": {"Order": {"@id": 12345, **{k: v for k, v in ORDER.items() if k != "orderId"}}},
    "fix": {
        "8": "FIX.4.2",
        "9": 178,
        "35": "D",
        "49": "CLIENT",
        "56": "BROKER",
        "34": 215,
        "52": "20240301-09:00:00",
        "11": "ORD-12345",
        "55": "AAPL",
        "54": 1,
        "38": 100,
        "40": 2,
        "44": 187.25,
        "59": 0,
        "60": "20240301-09:00:00",
        "1": "ACC-7",
        "58": "hello world note",
        "10": "072",
    },
    "nvfix": {k: (v if not isinstance(v, dict | list) else str(v)) for k, v in ORDER.items()},
    "binary": b"x" * 200,
}


def _best(stmt: Any, number: int = 20_000) -> float:
    # CPU time, not wall time: stable on a busy machine.
    return min(timeit.repeat(stmt, number=number, repeat=5, timer=time.process_time)) / number * 1e6


def main() -> None:
    print(f"{'codec':8} {'bytes':>5} {'decode µs':>10} {'encode µs':>10} {'total µs':>9}")
    for name, doc in SAMPLES.items():
        codec = get_codec(name)
        data = codec.encode(doc)
        decode = _best(lambda codec=codec, data=data: codec.decode(data))
        decoded = codec.decode(data)
        encode = _best(lambda codec=codec, decoded=decoded: codec.encode(decoded))
        print(f"{name:8} {len(data):5} {decode:10.2f} {encode:10.2f} {decode + encode:9.2f}")


if __name__ == "__main__":
    main()
