"""Foundation targets for ``report.py``: reopen and file size.

Every function takes the run's :class:`~workload.Sizes` and a scratch directory and
returns report rows; peers get byte-identical input.
"""

from __future__ import annotations

import glob
import os
import statistics
from typing import Any

from memory_probe import opener_memory
from rows import Row, bound
from scale_data import rss_anon
from timing import chunks, timed
from workload import Sizes, json_messages, json_orders

from sowlib import SowStore

__all__ = ["BATCH", "compaction_rows", "open_topic", "reopen_rows"]

#: Operations per timed sample.
BATCH = 1000
_G = "foundation"


def open_topic(directory: str, **options: Any) -> tuple[SowStore, Any]:
    """A fresh store in ``directory`` with an ``orders`` topic keyed by /orderId."""
    store = SowStore(directory)
    options.setdefault("keys", ["/orderId"])
    return store, store.create_topic("orders", **options)


def reopen_rows(sizes: Sizes, tmp: str, repeats: int = 3) -> list[Row]:
    """Open a topic of ``sizes.reopen`` live records after a clean close and after a crash.

    The topic keeps the declared indexes (hash /symbol, memo /price). Also reported: the
    writer's anonymous memory per record after building (grown in this process, the
    messages generated beforehand) and a read-only opener's (in a fresh process).
    """
    directory = os.path.join(tmp, "reopen")
    messages = json_orders(sizes.reopen)
    base = rss_anon()
    store, topic = open_topic(directory, hash_indexes=[["/symbol"]], indexes=["/price"])
    for batch in chunks(messages, 10 * BATCH):
        topic.publish_many(batch)
    writer_bytes = rss_anon() - base
    store.close()
    del messages
    opener_bytes = opener_memory(directory)

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
    full = sizes.reopen >= 1_000_000
    return [
        bound(
            _G,
            f"writer: anonymous memory after building {n} records (this process)",
            writer_bytes / sizes.reopen,
            "B/record",
            500 if full else None,
        ),
        bound(
            _G,
            f"read-only opener of {n} records: anonymous memory (fresh process)",
            opener_bytes / sizes.reopen,
            "B/record",
            300 if full else None,
        ),
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
