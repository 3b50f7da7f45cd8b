"""Issue 27, a read-only process keeps its topics: a ``Topic`` got from a read-only store
stays valid across ``refresh()``, the writer's compactions and the writer's reopen —
tested with a writer in another process compacting in a loop while this process holds
its handles and queries."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sowlib import SowStore

ROOT = Path(__file__).resolve().parents[1]

# The writer: 200 orders, then rounds of updates each followed by a compaction; a round's
# number is in every record it writes, and the last line is printed when it has stopped.
# Each round waits for a line from the reader, so the two interleave however loaded the
# machine is (the round itself runs while the reader reads).
WRITER = textwrap.dedent(
    """
    import sys, time
    from sowlib import SowStore
    path, rounds = sys.argv[1], int(sys.argv[2])
    with SowStore(path) as store:
        orders = store.create_topic("orders", keys=["/id"], indexes=["/round"])
        orders.publish_many([{"id": i, "round": 0, "px": i} for i in range(200)])
        store.flush()
        print("ready", flush=True)
        for r in range(1, rounds + 1):
            sys.stdin.readline()
            orders.publish_many([{"id": i, "round": r, "px": i + r} for i in range(0, 200, 2)])
            orders.publish_many([{"id": i, "round": r, "px": i + r} for i in range(1, 200, 2)])
            orders.sow_delete(f"/id = {200 + r - 1}")
            orders.publish({"id": 200 + r, "round": r, "px": -1})
            orders.compact()
            store.flush()
            time.sleep(0.01)
    with SowStore(path) as store:  # the writer reopens and compacts once more
        store.topic("orders").publish({"id": 999, "round": rounds + 1, "px": -1})
        store.topic("orders").compact()
    print("done", flush=True)
    """
)


def _start_writer(path: Path, rounds: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(rounds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _consistent(orders: object) -> int:
    """The records agree with each other and with the indexes, by query and by key;
    returns the newest round seen."""
    recs = list(orders.sow())  # type: ignore[attr-defined]
    assert 200 <= len(recs) <= 202
    for r in recs:
        assert r.doc["px"] == (-1 if r.doc["id"] >= 200 else r.doc["id"] + r.doc["round"])
    rounds = {r.doc["round"] for r in recs if r.doc["id"] < 200}  # the key range updated
    assert max(rounds) - min(rounds) <= 1  # a refresh may fall inside a round
    newest = max(rounds)
    by_index = orders.sow(f"/round = {newest}")  # type: ignore[attr-defined]
    assert len(by_index) == sum(1 for r in recs if r.doc["round"] == newest)
    rec = orders.lookup(7)  # type: ignore[attr-defined]
    assert rec is not None
    assert rec.doc["px"] == 7 + rec.doc["round"]
    assert orders[8].doc["id"] == 8  # type: ignore[index]
    return newest


def _go(writer: subprocess.Popen[str]) -> None:
    """Let the writer start its next round (it may have finished: then nothing)."""
    assert writer.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        writer.stdin.write("\n")
        writer.stdin.flush()


def test_handles_survive_a_compacting_writer(tmp_path: Path) -> None:
    path = tmp_path / "s"
    rounds = 40
    writer = _start_writer(path, rounds)
    seen: list[int] = []
    try:
        with SowStore(path, readonly=True) as store:
            orders = store.topic("orders")  # got once, used throughout
            deadline = time.monotonic() + 120
            while writer.poll() is None and time.monotonic() < deadline:
                store.refresh()
                seen.append(_consistent(orders))
                orders.refresh()  # the topic's own refresh keeps it valid too
                seen.append(_consistent(orders))
                _go(writer)
            assert writer.wait(timeout=60) == 0
            store.refresh()
            assert not orders.closed
            assert orders.lookup(999) is not None  # after the writer's reopen and compaction
            assert _consistent(orders) == rounds
            assert len(orders) == 202
            assert seen == sorted(seen)  # never back in time
            assert orders.stats()["records"] == 202
            assert store.topic("orders") is orders  # the store hands out the same handle
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        assert writer.stdout is not None
        writer.stdout.close()
        if writer.stdin is not None:
            with contextlib.suppress(OSError):
                writer.stdin.close()
    assert len(seen) > 4, "the reader never ran while the writer compacted"


def test_a_topic_refreshed_by_itself_follows_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SowStore(path) as writer_store:
        orders = writer_store.create_topic("orders", keys=["/id"])
        orders.publish_many([{"id": i, "v": 0} for i in range(100)])
        writer_store.flush()
        with SowStore(path, readonly=True) as reader:
            held = reader.topic("orders")
            assert held[5].doc["v"] == 0
            orders.publish_many([{"id": i, "v": 1} for i in range(100)])
            orders.compact()
            writer_store.flush()
            assert held.refresh() == 100  # the new file's records
            assert held[5].doc["v"] == 1
            assert len(held.sow("/v = 1")) == 100
            orders.publish({"id": 5, "v": 2})
            writer_store.flush()
            assert held.refresh() == 1  # then appends as before
            rec = held.lookup(id=5)
            assert rec is not None
            assert rec.doc["v"] == 2
