"""Keep a subscription's bookmark in a SOW topic, get killed, restart, resume exactly.

The pattern AMPS programs use for exactly-once processing: a bookmark
subscription replays the transaction log; after handling each message the
program stores, in one SOW record keyed on ``/clientName,/subId``, both its
result so far and the message's bookmark. After a crash it reads that record
and resubscribes from the stored bookmark: nothing is lost, nothing repeated.

The parent runs a worker process twice over one store directory. Run 1
publishes orders 1-20, processes 12 of them and is killed with SIGKILL. Run 2
publishes orders 21-25, resumes, receives the rest live while publishing 26-30.

Run: python examples/resume_from_bookmark.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

import sowlib.compat as AMPS
from sowlib import SowStore, StateStore

URI = "tcp://localhost:9007/amps/json"
WHO = {"clientName": "order-totaller", "subId": "orders-feed"}


def open_world(directory: str) -> tuple[SowStore, AMPS.Journal]:
    """What an AMPS configuration would declare: two SOW topics and a transaction log."""
    store = SowStore(os.path.join(directory, "sow"))
    store.create_topic("orders", keys=["/id"])
    store.create_topic("/ADMIN/bookmark_store", keys=["/clientName", "/subId"])
    journal = AMPS.Journal(os.path.join(directory, "journal"), ["orders"])
    AMPS.attach(store, URI, journal=journal)
    return store, journal


def worker(directory: str, first: int, last: int, live_until: int, die_after: int) -> None:
    """One run of the application (a child process)."""
    store, journal = open_world(directory)
    client = AMPS.Client("order-totaller")
    client.connect(URI)
    client.logon()
    for n in range(first, last + 1):
        client.publish("orders", json.dumps({"id": n, "qty": n * 10}))

    state = StateStore(store.topic("/ADMIN/bookmark_store"), key=WHO)
    start = state.get("bookmark", AMPS.Client.Bookmarks.EPOCH)
    handled = 0
    stream = client.bookmark_subscribe("orders", start).timeout(100)
    upstream = last
    for message in stream:
        if message is None:  # heartbeat: the log is drained; the "upstream" publishes more
            if upstream >= live_until:
                break
            upstream += 1
            client.publish("orders", json.dumps({"id": upstream, "qty": upstream * 10}))
            continue
        order = json.loads(message.get_data())
        # Result and bookmark in one record: one publish, so they never disagree.
        state.update(
            bookmark=message.get_bookmark(),
            count=state.get("count", 0) + 1,
            total_qty=state.get("total_qty", 0) + order["qty"],
            ids=[*state.get("ids", []), order["id"]],
        )
        handled += 1
        if handled == die_after:
            os.kill(os.getpid(), signal.SIGKILL)  # a crash: no close, no flush
    state.close()
    print(json.dumps(state.snapshot()))
    client.disconnect()
    journal.close()
    store.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:

        def run(*args: int) -> subprocess.CompletedProcess[str]:
            argv = [sys.executable, __file__, "--worker", directory, *map(str, args)]
            return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

        first = run(1, 20, 20, 12)
        assert first.returncode == -signal.SIGKILL, first.stderr
        print("run 1: killed after handling 12 orders")
        second = run(21, 25, 30, 0)
        assert second.returncode == 0, second.stderr
        state = json.loads(second.stdout)
        print(f"run 2: resumed; {state['count']} orders handled in total")
        assert state["ids"] == list(range(1, 31)), state["ids"]  # none lost, none repeated
        assert state["total_qty"] == sum(n * 10 for n in range(1, 31))
        print("every order handled exactly once; total qty", state["total_qty"])


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--worker":
        worker(sys.argv[2], *(int(a) for a in sys.argv[3:]))
    else:
        main()
