"""Write targets for ``report.py``: publishing updates with two indexes kept.

Every contender is first loaded (untimed) with one message per orderId, so the timed
stream updates existing keys. sowlib keeps a hash index on /symbol and a memo index on
/price; sqlite3 keeps the same two fields in expression indexes; lmdb keeps no index.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from peers import LmdbPeer, SqlitePeer
from rows import Row, compare
from scen_store import BATCH, open_topic
from timing import chunks, interleaved
from workload import SEED, SYMBOLS, Sizes, json_orders

__all__ = ["INDEXES", "publish_rows"]

#: The declared indexes of the indexed topic, as ``create_topic`` options.
INDEXES: dict[str, Any] = {"hash_indexes": [["/symbol"]], "indexes": ["/price"]}
_G = "publish"
_LOAD = 10 * BATCH


def _load(publish: Any, messages: Sequence[bytes]) -> None:
    for batch in chunks(messages, _LOAD):
        publish(batch)


def publish_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """publish_many of updates vs sqlite3 and lmdb, vs inserts; per-message publish."""
    first = json_orders(sizes.order_ids, seed=SEED + 20)  # orderIds 0..order_ids-1
    updates = json_orders(sizes.messages, order_ids=sizes.order_ids, symbols=SYMBOLS)
    inserts = json_orders(sizes.messages, seed=SEED + 21)  # distinct orderIds, same size
    batches = chunks(updates, BATCH)
    opened: list[Any] = []

    def topic(name: str) -> Any:
        store, made = open_topic(os.path.join(tmp, name), **INDEXES)
        opened.append(store)
        return made

    def sqlite(name: str) -> SqlitePeer:
        made = SqlitePeer(os.path.join(tmp, name), expression_indexes=["/symbol", "/price"])
        opened.append(made)
        return made

    upd, ins, sql = topic("update"), topic("insert"), sqlite("update.sqlite")
    lmdb = LmdbPeer(os.path.join(tmp, "update.lmdb"))
    opened.append(lmdb)
    for publish in (upd.publish_many, sql.publish_many, lmdb.publish_many):
        _load(publish, first)
    many = interleaved(
        {
            "update": (upd.publish_many, batches),
            "insert": (ins.publish_many, chunks(inserts, BATCH)),
            "sqlite": (sql.publish_many, batches),
            "lmdb": (lmdb.publish_many, batches),
        },
        BATCH,
    )
    assert len(upd) == sql.count() == sizes.order_ids, "the stream only updates"
    assert len(ins) == sizes.messages, "the insert stream only inserts"
    assert upd.stats()["indexes"], "the topic reports its indexes"
    probe = "json_extract(doc, '$.symbol') = ?"
    assert len(upd.sow("/symbol = 'SYM001'")) == len(sql.query(probe, ("SYM001",)))

    each, sql_each = topic("each"), sqlite("each.sqlite")
    for publish in (each.publish_many, sql_each.publish_many):
        _load(publish, first)

    def publish_each(batch: Any) -> None:
        publish = each.publish
        for m in batch:
            publish(m)

    stream = chunks(updates[: sizes.each], BATCH)
    one = interleaved(
        {"sowlib": (publish_each, stream), "sqlite": (sql_each.publish_each, stream)}, BATCH
    )
    assert len(each) == sql_each.count()
    for thing in opened:
        thing.close()
    op = f"publish_many of updates ({sizes.messages:,} over {sizes.order_ids:,} keys, 1000/batch)"
    kept = ", hash /symbol + memo /price kept"
    return [
        compare(_G, op + kept, many["update"], "sqlite3 executemany, 2 expression indexes",
                many["sqlite"], 2.0),
        compare(_G, op + kept, many["update"], "lmdb putmulti (no index)", many["lmdb"], 0.7),
        compare(_G, "publish_many of updates (same indexes)", many["update"],
                f"sowlib publish_many of {sizes.messages:,} inserts", many["insert"], 0.8),
        compare(_G, f"publish per message, {sizes.each:,} updates (same indexes)",
                one["sowlib"], "sqlite3 execute per message (same indexes)", one["sqlite"], 1.0),
    ]  # fmt: skip
