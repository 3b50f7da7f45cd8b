"""A full disk under the journal (ENOSPC injected through the ``FileSystem`` seam, after a
short write of what still fits).

Random publishes, ``publish_many`` batches and deletes of a journalled topic, with the
journal's disk running out after a random number of bytes (entries, commit marks, seals,
state-file writes alike). The change that found no room must raise ``StoreFullError``
(it is not acknowledged); no journal file may hold half an entry (``verify`` finds
nothing damaged and no torn tail); once there is room the journal and the store open,
the SOW equals the journal's replay, and every acknowledged change is in both.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import SowError, StoreFullError
from sowlib.journal import Journal
from sowlib.journal.repair import verify_journal

from .conftest import FULL, NO_SYNC, SEED, FullDisk, Tally

pytestmark = pytest.mark.fault

TRIALS = 300 if FULL else 30
IDS = 200


class ShortWrites(FullDisk):
    """A full disk that takes the bytes that still fit before refusing the rest (a short
    write), as a real one does: half an entry reaches the file."""

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        if self.room is not None and 0 < self.room < len(data):
            return super().write(fd, bytes(data[: self.room]))
        return super().write(fd, data)


def _plan(
    topic: Any, rng: random.Random, n: int
) -> tuple[dict[int, int | None], Callable[[], object]]:
    op = rng.choice(("publish", "batch", "delete"))
    if op == "publish":
        i = rng.randrange(IDS)
        doc = {"id": i, "n": n, "pad": "p" * rng.randrange(300)}
        return {i: n}, lambda: topic.publish(doc)
    if op == "batch":
        ids = rng.sample(range(IDS), rng.randint(5, 80))
        docs = [{"id": i, "n": n} for i in ids]
        return dict.fromkeys(ids, n), lambda: topic.publish_many(docs)
    ids = rng.sample(range(IDS), 4)
    keys = [topic.key_for({"id": i}) for i in ids]
    return dict.fromkeys(ids, None), lambda: topic.sow_delete_by_keys(keys)


def _open(path: Path, fs: Any) -> tuple[SowStore, Any, Journal]:
    store = SowStore(path / "sow", fs=NO_SYNC)
    if "t" in [t.name for t in store.topics()]:
        topic = store.topic("t")
    else:
        topic = store.create_topic("t", keys=["/id"], slab_size="64KB")
    journal = Journal(path / "journal", ["t"], file_size="8KB", fs=fs)
    journal.watch(store)
    return store, topic, journal


def test_enospc_on_the_journal_fails_the_publish_and_leaves_no_half_entry(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    tally = Tally("journal ENOSPC")
    for trial in range(TRIALS):
        path = tmp_path / f"s{trial}"
        fs = ShortWrites()
        model: dict[int, int | None] = {}
        pending: dict[int, int | None] = {}
        store, topic, journal = _open(path, fs)
        for n in range(rng.randint(0, 20)):
            changes, call = _plan(topic, rng, n)
            call()
            model.update(changes)
        fs.room = rng.randint(0, 30_000)
        outcome = "no error"
        try:
            for n in range(1000, 1300):
                pending, call = _plan(topic, rng, n)
                call()
                model.update(pending)
                pending = {}
        except StoreFullError:
            outcome = "StoreFullError"
            if trial % 2:  # space comes back and the same process writes on
                fs.room = None
                for n in range(2000, 2010):
                    changes, call = _plan(topic, rng, n)
                    call()
                    model.update(changes)
                    for i in changes:  # acknowledged since: the failed value is gone
                        pending.pop(i, None)
        except Exception as exc:  # nothing else may escape
            tally.add("escaped", f"trial {trial}: {exc!r}")
        for closing in (journal, store):
            try:
                closing.close()
            except SowError:
                tally.add(f"{type(closing).__name__}.close raised a SowError")
            except Exception as exc:
                tally.add("escaped at close", f"trial {trial}: {exc!r}")
        tally.add(outcome)
        report = verify_journal(str(path / "journal"))
        if not report.ok or any(s.torn_tail for s in report.segments):
            tally.add("half-written journal", f"trial {trial}: {report}")
        fs.room = None
        try:
            store, topic, journal = _open(path, NO_SYNC)
            got = {rec.doc["id"]: rec.doc["n"] for rec in topic.sow()}
            journalled: dict[str, bytes] = {}
            for entry in journal.replay():
                if entry.kind == "publish":
                    journalled[entry.sow_key] = entry.data
                else:
                    journalled.pop(entry.sow_key, None)
            sow = {r.sow_key: r.data for r in topic.sow()}
            topic.publish({"id": 0, "n": -1})  # takes writes again
            journal.close()
            store.close()
        except SowError as exc:
            tally.add("failed to reopen", f"trial {trial}: {exc!r}")
            continue
        stored = {k: v if isinstance(v, bytes) else str(v).encode() for k, v in sow.items()}
        if stored != journalled:
            tally.add("SOW differs from the journal", f"trial {trial}")
        for i in range(IDS):
            want = model.get(i)
            if got.get(i) != want and not (i in pending and got.get(i) == pending[i]):
                tally.add("lost or wrong", f"trial {trial}: id {i} = {got.get(i)}, want {want}")
    tally.report(trials=TRIALS)
    assert not tally.failures, tally.failures[:10]
    assert tally.counts["StoreFullError"] > TRIALS // 2
