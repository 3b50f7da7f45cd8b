"""How a read-only process learns of a writer's new data: the bell and the watcher.

A SOW log is written through a memory map, which inotify does not report, so the
writer rings a bell file while a reader listens; a journal or bus file is written
with ``write``, which inotify reports itself. The polling follower
(``SOWLIB_FOLLOW_POLL=1``) is the reference the watching one must agree with.
Writers and subscribers here are separate processes.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.storage.bell import BELL_NAME, LISTEN_NAME, LISTEN_TTL, Bell, Watcher, listen

pytestmark = pytest.mark.slow  # subprocesses

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_the_writer_rings_only_while_a_reader_listens(tmp_path: Path) -> None:
    bell = Bell(str(tmp_path))
    bell.ring()
    assert bell.rings == 0
    assert not (tmp_path / BELL_NAME).exists()  # no reader: the writer creates nothing
    assert listen(str(tmp_path))
    bell = Bell(str(tmp_path))  # (a bell looks for readers every CHECK_EVERY seconds)
    bell.ring()
    bell.ring()
    assert bell.rings == 2
    assert (tmp_path / BELL_NAME).exists()
    bell.close()
    old = time.time() - LISTEN_TTL - 1
    (tmp_path / LISTEN_NAME).write_bytes(struct.pack("<d", old))  # the reader went away
    stale = Bell(str(tmp_path))
    stale.ring()
    assert stale.rings == 0
    stale.close()


def test_the_watcher_wakes_for_another_process_writing_and_ignores_listen_marks(
    tmp_path: Path,
) -> None:
    watcher = Watcher()
    if not watcher.available:
        pytest.skip("no inotify on this system")
    assert watcher.watch(str(tmp_path))
    assert watcher.wait(0) is False
    assert listen(str(tmp_path))  # a reader's mark does not wake the others
    assert watcher.wait(0.05) is False
    code = f"open({str(tmp_path / 'journal.log')!r}, 'ab').write(b'x')"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT)
    assert watcher.wait(WAIT) is True
    assert watcher.wait(0) is False  # the events were drained
    watcher.close()
    assert Watcher(enabled=False).available is False


def test_a_burst_of_more_events_than_one_read_holds_is_drained_by_one_wait(
    tmp_path: Path,
) -> None:
    """Hundreds of long-named files made at once (far more event bytes than one read
    takes): one wait reports the change and drains them all; the next finds none."""
    watcher = Watcher()
    if not watcher.available:
        pytest.skip("no inotify on this system")
    assert watcher.watch(str(tmp_path))
    code = (
        f"import os\nfor i in range(300): open(os.path.join({str(tmp_path)!r}, "
        "'f%03d' % i + 'x' * 200), 'wb').close()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT)
    assert watcher.wait(WAIT) is True
    assert watcher.wait(0) is False
    (tmp_path / LISTEN_NAME).unlink(missing_ok=True)
    assert listen(str(tmp_path))  # a mark made anew (created, written) wakes nobody
    assert watcher.wait(0.05) is False
    watcher.close()


SUBSCRIBER = textwrap.dedent(
    """
    import json, sys, threading
    from sowlib import SowStore
    from sowlib.topic.follow import FOLLOWER
    path, count = sys.argv[1], int(sys.argv[2])
    store = SowStore(path, readonly=True)
    got, done = [], threading.Event()
    def on(m):
        got.append([m.command, m.sow_key, m.data.decode() if m.data else None])
        if len(got) >= count:
            done.set()
    store.topic("orders").subscribe(on, "/qty > 1", oof=True)
    print("ready", flush=True)
    done.wait(60)
    print(json.dumps({"got": got, "wakes": FOLLOWER.wakes}), flush=True)
    store.close()
    """
)


def subscribe(path: Path, count: int, poll: bool) -> subprocess.Popen[str]:
    env = {**ENV, "SOWLIB_FOLLOW_POLL": "1"} if poll else ENV
    proc = subprocess.Popen(
        [sys.executable, "-c", SUBSCRIBER, str(path), str(count)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_watching_and_polling_subscribers_get_the_same_changes(tmp_path: Path) -> None:
    """The same publishes, OOFs and deletes reach a watching subscriber process and a
    polling one (the reference), in the same order; the watching one was woken."""
    store = SowStore(tmp_path / "store")
    orders = store.create_topic("orders", keys=["/id"])
    orders.publish({"id": 0, "qty": 5})
    watching = subscribe(tmp_path / "store", 6, poll=False)
    polling = subscribe(tmp_path / "store", 6, poll=True)
    time.sleep(0.5)  # the writer looks for a listening reader every quarter second
    orders.publish({"id": 1, "qty": 2})
    orders.publish({"id": 2, "qty": 1})  # never matches
    orders.publish({"id": 1, "qty": 0})  # out of focus: match
    orders.publish({"id": 3, "qty": 7})
    orders.sow_delete("/id = 3")
    orders.publish({"id": 4, "qty": 3})
    orders.publish({"id": 0, "qty": 9})
    results = []
    for proc in (watching, polling):
        out, _ = proc.communicate(timeout=WAIT)
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["got"] == results[1]["got"]
    commands = [g[0] for g in results[0]["got"]]
    assert commands == ["publish", "oof", "publish", "oof", "publish", "publish"]
    assert results[0]["wakes"] > 0
    assert results[1]["wakes"] == 0
    store.close()


def test_an_idle_watching_subscriber_is_not_woken(tmp_path: Path) -> None:
    store = SowStore(tmp_path / "store")
    store.create_topic("orders", keys=["/id"]).publish({"id": 0, "qty": 5})
    proc = subscribe(tmp_path / "store", 1, poll=False)
    time.sleep(1.0)
    store.topic("orders").publish({"id": 1, "qty": 2})
    out, _ = proc.communicate(timeout=WAIT)
    result = json.loads(out.strip().splitlines()[-1])
    assert [(g[0], json.loads(g[2])) for g in result["got"]] == [("publish", {"id": 1, "qty": 2})]
    assert 1 <= result["wakes"] <= 3  # the publish (and at most a mark or two), no polling
    store.close()
