"""Codec targets for ``report.py``: publish rate per message type, and delta publish.

The same orders rendered as json, xml, fix, nvfix and msgpack (see :mod:`workload`).
"""

from __future__ import annotations

import os
from typing import Any

from rows import Row, compare, info
from scen_store import BATCH, open_topic
from timing import chunks, interleaved
from workload import KEYS, Sizes, json_messages, render

__all__ = ["CODECS", "codec_rows", "delta_rows"]

CODECS = ("json", "xml", "fix", "nvfix", "msgpack")
_C = "codecs"


def codec_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """publish_many per message type, interleaved; XML and FIX must be within 3x of json
    (their rate at least 0.33x json's)."""
    work = {}
    opened = []
    for name in CODECS:
        store, topic = open_topic(
            os.path.join(tmp, f"codec_{name}"), keys=[KEYS[name]], message_type=name
        )
        opened.append((store, topic))
        work[name] = (topic.publish_many, chunks(render(name, sizes.each), BATCH))
    res = interleaved(work, BATCH)
    counts = {len(topic) for _, topic in opened}
    assert len(counts) == 1, f"every codec stores the same keys: {counts}"
    for store, _ in opened:
        store.close()
    out = [info(_C, f"publish_many {name}", res[name]) for name in CODECS]
    # "within 3x of json": at least a third of json's rate
    out += [
        compare(
            _C, f"publish_many {name}", res[name], "sowlib publish_many json", res["json"], 0.33
        )
        for name in ("xml", "fix")
    ]
    return out


def delta_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Per-message delta_publish vs publish of the same JSON messages (within 2x)."""
    msgs = json_messages(sizes.each)
    batches = chunks(msgs, BATCH)
    store, topic = open_topic(os.path.join(tmp, "delta_pub"))
    dstore, dtopic = open_topic(os.path.join(tmp, "delta"))

    def publish(batch: Any) -> None:
        fn = topic.publish
        for m in batch:
            fn(m)

    def delta(batch: Any) -> None:
        fn = dtopic.delta_publish
        for m in batch:
            fn(m)

    res = interleaved({"publish": (publish, batches), "delta": (delta, batches)}, BATCH)
    assert len(topic) == len(dtopic)
    store.close()
    dstore.close()
    return [
        compare(
            _C,
            "delta_publish per message (json)",
            res["delta"],
            "sowlib publish",
            res["publish"],
            0.5,
        ),
    ]
