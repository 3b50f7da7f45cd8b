"""Foundation targets for ``report.py``: publish, get, reopen and file size.

Every function takes the run's :class:`~workload.Sizes` and a scratch directory and
returns report rows; peers get byte-identical input.
"""

from __future__ import annotations

import glob
import os
import random
import statistics
from typing import Any

import orjson
from peers import DictFloor, DiskcachePeer, LmdbPeer, SqlitePeer
from rows import Row, bound, compare
from timing import chunks, interleaved, timed
from workload import SEED, Sizes, json_messages, render

from sowlib import SowStore

__all__ = ["BATCH", "compaction_rows", "get_rows", "open_topic", "publish_rows", "reopen_rows"]

#: Operations per timed sample.
BATCH = 1000
_G = "foundation"


def open_topic(directory: str, **options: Any) -> tuple[SowStore, Any]:
    """A fresh store in ``directory`` with an ``orders`` topic keyed by /orderId."""
    store = SowStore(directory)
    options.setdefault("keys", ["/orderId"])
    return store, store.create_topic("orders", **options)


def publish_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """publish_many and per-message publish vs sqlite3, the dict floors, diskcache, lmdb.

    Three interleaved groups (targets, per-message, context peers), each with its own
    fresh sowlib topic: fewer contenders per group keep caches from being shared by many.
    """
    batches = chunks(json_messages(sizes.each), BATCH)
    opened: list[Any] = []

    def topic(name: str) -> Any:
        store, made = open_topic(os.path.join(tmp, name))
        opened.append(store)
        return made

    def sqlite(name: str) -> SqlitePeer:
        made = SqlitePeer(os.path.join(tmp, name))
        opened.append(made)
        return made

    main, peer, floor, orjson_floor = (
        topic("pub"),
        sqlite("pub.sqlite"),
        DictFloor(),
        DictFloor(orjson.loads),
    )
    targets = interleaved(
        {
            "sowlib": (main.publish_many, batches),
            "sqlite": (peer.publish_many, batches),
            "dict": (floor.publish_many, batches),
            "dict_orjson": (orjson_floor.publish_many, batches),
        },
        BATCH,
    )
    assert len(main) == peer.count() == len(floor.data)
    each, peer_each = topic("pub_each"), sqlite("pub_each.sqlite")

    def publish_each(batch: Any) -> None:
        publish = each.publish
        for m in batch:
            publish(m)

    per_message = interleaved(
        {"sowlib": (publish_each, batches), "sqlite": (peer_each.publish_each, batches)}, BATCH
    )
    ctx_topic = topic("pub_ctx")
    dcache = DiskcachePeer(os.path.join(tmp, "pub.diskcache"))
    lmdb = LmdbPeer(os.path.join(tmp, "pub.lmdb"))
    opened += [dcache, lmdb]
    context = interleaved(
        {
            "sowlib": (ctx_topic.publish_many, batches),
            "diskcache": (dcache.publish_many, batches),
            "lmdb": (lmdb.publish_many, batches),
        },
        BATCH,
    )
    for thing in opened:
        thing.close()
    mine, op = targets["sowlib"], "publish_many (1000/batch)"
    return [
        compare(_G, op, mine, "sqlite3 executemany", targets["sqlite"], 2.5),
        compare(_G, op, mine, "dict + json.loads", targets["dict"], 1.0),
        compare(_G, op, mine, "dict + orjson.loads", targets["dict_orjson"], None),
        compare(_G, op, context["sowlib"], "diskcache", context["diskcache"], None),
        compare(_G, op, context["sowlib"], "lmdb putmulti", context["lmdb"], None),
        compare(_G, "publish per message", per_message["sowlib"], "sqlite3 execute",
                per_message["sqlite"], None),
    ]  # fmt: skip


def get_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Point ``get`` of stored keys vs sqlite3's primary-key SELECT."""
    msgs = json_messages(sizes.each)
    store, topic = open_topic(os.path.join(tmp, "get"))
    sqlite = SqlitePeer(os.path.join(tmp, "get.sqlite"))
    topic.publish_many(msgs)
    sqlite.publish_many(msgs)
    rng = random.Random(SEED + 10)
    picks = [msgs[rng.randrange(len(msgs))] for _ in range(min(100 * BATCH, sizes.each))]
    sow_keys = [topic.key_for(m) for m in picks]
    ids = [orjson.loads(m)["orderId"] for m in picks]
    get, peer_get = topic.get, sqlite.get

    def mine(keys: Any) -> None:
        for k in keys:
            get(k)

    def theirs(keys: Any) -> None:
        for k in keys:
            peer_get(k)

    res = interleaved(
        {"sowlib": (mine, chunks(sow_keys, BATCH)), "sqlite": (theirs, chunks(ids, BATCH))}, BATCH
    )
    assert topic.get(sow_keys[0]) is not None
    assert sqlite.get(ids[0]) is not None
    store.close()
    sqlite.close()
    return [compare(_G, "get(sow_key)", res["sowlib"], "sqlite3 SELECT by key", res["sqlite"], 5.0)]


def reopen_rows(sizes: Sizes, tmp: str, repeats: int = 3) -> list[Row]:
    """Open a topic of ``sizes.reopen`` live records after a clean close and after a crash."""
    directory = os.path.join(tmp, "reopen")
    store, topic = open_topic(directory)
    for batch in chunks(render("json", sizes.reopen, unique=True), 10 * BATCH):
        topic.publish_many(batch)
    store.close()

    def reopen() -> int:
        opened = SowStore(directory)
        count = len(opened.topic("orders"))
        reopened.append(opened)
        return count

    clean, crash = [], []
    for _ in range(repeats):
        reopened: list[SowStore] = []
        seconds, count = timed(reopen)
        assert count == sizes.reopen
        clean.append(seconds)
        reopened.pop().close()
        ckpts = glob.glob(os.path.join(directory, "*.ckpt"))
        assert ckpts, "a clean close writes a checkpoint"
        for path in ckpts:
            os.unlink(path)  # the crash: the process died before writing its checkpoint
        seconds, count = timed(reopen)
        assert count == sizes.reopen
        crash.append(seconds)
        reopened.pop().close()
    n = f"{sizes.reopen:,}"
    return [
        bound(
            _G,
            f"reopen {n} records, clean close (median of {repeats})",
            statistics.median(clean),
            "s",
            1.0 if sizes.reopen >= 1_000_000 else None,
        ),
        bound(
            _G,
            f"reopen {n} records, crash (no checkpoint)",
            statistics.median(crash),
            "s",
            3.0 if sizes.reopen >= 1_000_000 else None,
        ),
    ]


def compaction_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """File size over live payload bytes during steady updates and after ``compact()``.

    Run with the default policy (compact at 50% garbage: fastest publishing) and with
    ``auto_compact=0.3`` (the setting that bounds the file at 2x the live payload).
    """
    rows = _compaction_rows(sizes, tmp, None)
    rows += _compaction_rows(sizes, tmp, 0.3)[:2]
    return rows


def _compaction_rows(sizes: Sizes, tmp: str, ratio: float | None) -> list[Row]:
    msgs = json_messages(sizes.each)
    options: dict[str, Any] = {} if ratio is None else {"auto_compact": ratio}
    label = "default policy" if ratio is None else f"auto_compact={ratio}"
    store, topic = open_topic(os.path.join(tmp, f"compact-{label}"), **options)
    latest: dict[str, int] = {}
    worst_file = worst_used = worst_framed = 0.0
    for batch in chunks(msgs, BATCH):
        for res, m in zip(topic.publish_many(batch), batch, strict=True):
            latest[res.sow_key] = len(m)
        st = topic.stats()
        payload = sum(latest.values())
        if st["used_bytes"] > 4 << 20:  # ignore the first slab: a small file is all slack
            worst_file = max(worst_file, st["file_bytes"] / payload)
            worst_used = max(worst_used, st["used_bytes"] / payload)
            worst_framed = max(worst_framed, st["file_bytes"] / st["live_bytes"])
    payload = sum(latest.values())
    seconds, _ = timed(topic.compact)
    after = topic.stats()
    store.close()
    return [
        bound(_G, f"file / live payload, steady updates (worst), {label}", worst_file, "x", 2.0),
        bound(_G, f"used / live payload, steady updates (worst), {label}", worst_used, "x", None),
        bound(_G, "file / stats live_bytes (framed), steady (worst)", worst_framed, "x", None),
        bound(_G, "file / live payload after compact()", after["file_bytes"] / payload, "x", 1.3),
        bound(_G, "used / live payload after compact()", after["used_bytes"] / payload, "x", None),
        bound(_G, f"compact() of {len(latest):,} live records", seconds, "s", None),
    ]
