"""Quickstart: publish, update, query by key and by filter, reopen, show the result.

Run: python examples/quickstart.py  (uses a temporary directory; no servers)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sowlib import SowStore


def main(directory: Path) -> None:
    # A persistent store: one memory-mapped log file per topic in `directory`.
    with SowStore(directory) as store:
        orders = store.create_topic("orders", keys=["/orderId"], indexes=["/price"])
        orders.publish('{"orderId": 1, "symbol": "MSFT", "price": 120, "region": "EU"}')
        orders.publish('{"orderId": 2, "symbol": "AAPL", "price": 95, "region": "US"}')
        # Same key: the whole record is replaced (AMPS SOW semantics).
        result = orders.publish('{"orderId": 1, "symbol": "MSFT", "price": 125, "region": "EU"}')
        print(f"update of order 1: inserted={result.inserted} seq={result.seq}")
        # A delta publish merges fields into the stored record.
        orders.delta_publish('{"orderId": 2, "status": "filled"}')
        key = orders.key_for({"orderId": 2})
        print("by key:", orders.get(key).data.decode())

    # Reopen: every topic comes back with its configuration and records.
    with SowStore(directory) as store:
        orders = store.topic("orders")
        print(f"after reopen: {len(orders)} records")
        for rec in orders.sow("/price > 100 AND /region = 'EU'", order_by="/price DESC"):
            print("  /price > 100 AND /region = 'EU' ->", rec.data.decode())
        print("plan:", orders.explain("/price > 100").describe())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(tmp) / "sow")
