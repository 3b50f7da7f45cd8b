"""View targets for ``report.py``: the publish rate into a topic with one view of 1,000
groups against the same topic without it (target >= 0.5x, issue 24), per view kind.

The orders, views and subscriber are those of :mod:`bench_views`: memory stores, the view
read once after the publishes (its upkeep, deferred to that read, timed with them: the
rate is the messages over the publishes' time plus the read's) and watched by a
subscriber (its groups written, and delivered, at the end of every write). The
contenders take turns batch by batch (:func:`timing.interleaved`), one ``publish`` per
message and ``publish_many`` of 1,000.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from bench_views import VIEWS, look, orders
from rows import Row, compare, info
from timing import chunks, interleaved
from workload import Sizes

from sowlib import SowStore

__all__ = ["view_rows"]

_G = "views"
_BATCH = 1_000
#: (mode, view kind) of each contender beside the topic without a view.
_CONTENDERS = (
    ("read", "sum"),
    ("read", "mixed"),
    ("read", "avg-min-stddev"),
    ("read", "count-distinct"),
    ("watched", "sum"),
    ("watched", "mixed"),
    ("watched", "avg-min-stddev"),
    ("watched", "count-distinct"),
)


_MODES = {
    "read": "read once after the run (its upkeep spread over the messages)",
    "watched": "watched",
}


def _open(mode: str | None, kind: str) -> tuple[SowStore, Any]:
    store = SowStore()
    topic = store.create_topic("orders", keys=["/orderId"])
    if mode is not None:
        view = store.create_view("totals", "orders", projection=VIEWS[kind], grouping=["/customer"])
        if mode == "watched":
            view.subscribe(look, oof=True)
    return store, topic


def _one_by_one(topic: Any) -> Callable[[Sequence[bytes]], None]:
    def publish(batch: Sequence[bytes]) -> None:
        fn = topic.publish
        for m in batch:
            fn(m)

    return publish


def view_rows(sizes: Sizes, tmp: str) -> list[Row]:
    """Publish rates with a view (read after the run, watched) against none; 20,000
    orders (2,000 with ``--quick``), keys repeating, 1,000 customers."""
    messages = orders(min(20_000, sizes.each // 10))
    out: list[Row] = []
    for label, per_batch in (("publish", 100), ("publish_many(1000)", _BATCH)):
        batches = chunks(messages, per_batch)
        opened: dict[str, tuple[SowStore, Any]] = {"none": _open(None, "")}
        for mode, kind in _CONTENDERS:
            opened[f"{mode} {kind}"] = _open(mode, kind)
        work = {
            name: (_one_by_one(topic) if per_batch != _BATCH else topic.publish_many, batches)
            for name, (_store, topic) in opened.items()
        }
        res = interleaved(work, per_batch)
        stored = {len(topic) for _store, topic in opened.values()}
        assert len(stored) == 1, f"every contender stores the same keys: {stored}"
        read_s: dict[str, float] = {}
        for name, (store, _topic) in opened.items():
            if name != "none":
                t0 = time.perf_counter()  # a read view's deferred upkeep, timed
                assert len(store.topic("totals").sow()) > 0
                read_s[name] = time.perf_counter() - t0
            store.close()
        out.append(info(_G, f"{label} without a view", res["none"], unit="msgs/s"))
        for mode, kind in _CONTENDERS:
            name = f"{mode} {kind}"
            stats = res[name]
            if mode == "read":  # the read's upkeep spread over the messages it took in
                spread = read_s[name] / stats.ops * 1e6
                stats = attrs.evolve(
                    stats,
                    total_s=stats.total_s + read_s[name],
                    median_us=stats.median_us + spread,
                    p99_us=stats.p99_us + spread,
                )
            out.append(
                compare(
                    _G,
                    f"{label} with a view of 1,000 groups ({kind}), {_MODES[mode]}",
                    stats,
                    "sowlib, no view",
                    res["none"],
                    0.5,
                    unit="msgs/s",
                )
            )
    return out
