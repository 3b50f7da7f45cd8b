"""A full disk (ENOSPC injected through the ``FileSystem`` seam) mid-publish, mid-batch,
mid-compaction and mid-close: a clear ``StoreFullError``, nothing acknowledged lost, the lock
released, and the store opens again once there is room."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import SowError, StoreFullError

from .conftest import FULL, NO_SYNC, SEED, FullDisk, Tally

pytestmark = pytest.mark.fault

TRIALS = 400 if FULL else 40
IDS = 300
OPS = ("publish", "batch", "delete", "compact", "reopen")


def _topic(store: SowStore) -> Any:
    if "t" in [t.name for t in store.topics()]:
        return store.topic("t")
    return store.create_topic("t", keys=["/id"], slab_size="16KB")


def _plan(
    op: str, topic: Any, rng: random.Random, n: int
) -> tuple[dict[int, int | None], Callable[[], object]]:
    """One operation: the values it sets (id -> n, None: deleted) and the call doing it."""
    if op == "publish":
        i = rng.randrange(IDS)
        doc = {"id": i, "n": n, "pad": "p" * rng.randrange(400)}
        return {i: n}, lambda: topic.publish(doc)
    if op == "batch":
        ids = rng.sample(range(IDS), rng.randint(20, 200))
        docs = [{"id": i, "n": n, "pad": "b" * (i % 50)} for i in ids]
        return dict.fromkeys(ids, n), lambda: topic.publish_many(docs)
    if op == "delete":
        ids = rng.sample(range(IDS), 5)
        keys = [topic.key_for({"id": i}) for i in ids]
        return dict.fromkeys(ids, None), lambda: topic.sow_delete_by_keys(keys)
    return {}, topic.compact


def _values(store: SowStore) -> dict[int, int]:
    if "t" not in [t.name for t in store.topics()]:
        return {}
    return {rec.doc["id"]: rec.doc["n"] for rec in store.topic("t").sow()}


def test_issue16_enospc_anywhere_is_a_store_full_error_and_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tally = Tally("ENOSPC")
    for trial in range(TRIALS):
        path = tmp_path / f"s{trial}"
        fs = FullDisk()
        model: dict[int, int | None] = {}
        pending: dict[int, int | None] = {}
        store = SowStore(path, fs=fs)
        topic = _topic(store)
        for n in range(rng.randint(0, 30)):  # some data before the disk fills up
            changes, call = _plan(rng.choice(OPS[:3]), topic, rng, n)
            call()
            model.update(changes)
        fs.room = rng.randint(0, 60_000)
        outcome = "no error"
        try:
            for n in range(1000, 1200):
                op = rng.choice(OPS)
                if op == "reopen":
                    store.close()
                    store = SowStore(path, fs=fs)
                    topic = _topic(store)
                    continue
                # the call in flight: its records may or may not be stored
                pending, call = _plan(op, topic, rng, n)
                call()
                model.update(pending)
                pending = {}
        except StoreFullError:
            outcome = f"StoreFullError during {op}"
        except SowError as exc:
            outcome = f"other SowError {type(exc).__name__}"
            tally.add(outcome, f"trial {trial}: {exc!r}")
        except Exception as exc:  # the property under test: nothing else escapes
            tally.add("escaped", f"trial {trial}: {exc!r}")
        try:
            store.close()  # may fail on the full disk; must still release the lock
        except SowError:
            tally.add("close raised a SowError")
        except Exception as exc:
            tally.add("escaped at close", f"trial {trial}: {exc!r}")
        fs.room = None
        tally.add(outcome)
        try:
            with SowStore(path, fs=NO_SYNC) as again:  # another opener: the lock was released
                got = _values(again)
                _topic(again).publish({"id": 0, "n": -1})  # and it takes writes again
        except SowError as exc:
            tally.add("failed to reopen", f"trial {trial}: {exc!r}")
            continue
        for i in range(IDS):
            want = model.get(i)
            if got.get(i) != want and not (i in pending and got.get(i) == pending[i]):
                tally.add("lost or wrong", f"trial {trial}: id {i} = {got.get(i)}, want {want}")
    tally.report(trials=TRIALS)
    assert not tally.failures, tally.failures[:10]
    full = sum(v for k, v in tally.counts.items() if k.startswith("StoreFullError"))
    assert full > TRIALS // 4
