"""Bookmark subscriptions over the transaction log: replay, resume, restart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from tests.compat.conftest import CONFIG, URI


def connected(uri, name="bookmarks"):
    client = AMPS.Client(name)
    client.connect(uri)
    client.logon()
    return client


def drain(stream):
    out = []
    for message in stream.timeout(20):
        if message is None:
            break
        out.append(message)
    return out


def ids(messages):
    return [json.loads(m.get_data())["id"] for m in messages]


def test_replay_from_epoch_then_live_without_gap_or_duplicate(uri):
    client = connected(uri)
    for i in range(1, 4):
        client.publish("orders", json.dumps({"id": i}))
    got: list[AMPS.Message] = []
    client.bookmark_subscribe(got.append, "orders", AMPS.Client.Bookmarks.EPOCH)
    assert ids(got) == [1, 2, 3]
    client.publish("orders", '{"id": 4}')
    client.delta_publish("orders", '{"id": 4, "extra": true}')
    assert ids(got) == [1, 2, 3, 4, 4]
    assert json.loads(got[-1].get_data()) == {"id": 4, "extra": True}  # the merged record
    bookmarks = [m.get_bookmark() for m in got]
    assert len(set(bookmarks)) == 5
    assert all(b.endswith("|") for b in bookmarks)


def test_resume_just_after_a_bookmark_with_filter(uri):
    client = connected(uri)
    for i in range(1, 6):
        client.publish("orders", json.dumps({"id": i, "qty": i * 10}))
    first = drain(client.bookmark_subscribe("orders", "0", sub_id="first"))
    mark = first[1].get_bookmark()
    resumed = client.bookmark_subscribe("orders", mark, filter="/qty > 30")
    client.publish("orders", '{"id": 6, "qty": 60}')
    client.publish("orders", '{"id": 7, "qty": 5}')
    assert ids(drain(resumed)) == [4, 5, 6]


def test_now_starts_live_and_most_recent_resumes(uri):
    client = connected(uri)
    client.publish("orders", '{"id": 1}')
    live = client.bookmark_subscribe("orders", AMPS.Client.Bookmarks.NOW, sub_id="live")
    client.publish("orders", '{"id": 2}')
    assert ids(drain(live)) == [2]
    client.unsubscribe("live")
    client.publish("orders", '{"id": 3}')
    again = client.bookmark_subscribe("orders", AMPS.Client.Bookmarks.MOST_RECENT, sub_id="live")
    assert ids(drain(again)) == [3]


def test_replay_from_a_timestamp(uri, clock):
    client = connected(uri)
    client.publish("orders", '{"id": 1}')
    clock.now += 3600
    client.publish("orders", '{"id": 2}')
    stamp = AMPS.Message("x", "", timestamp=clock.now - 60).get_timestamp()
    assert ids(drain(client.bookmark_subscribe("orders", stamp))) == [2]


def test_deletes_replayed_as_oof_and_pub_sub_topics_journalled(uri):
    client = connected(uri)
    client.publish("orders", '{"id": 1}')
    client.sow_delete("orders", "/id = 1")
    client.publish("chat", '{"text": "hello"}')
    with_oof = drain(client.bookmark_subscribe("orders", "0", options="oof"))
    assert [(m.get_command(), m.get_reason()) for m in with_oof] == [
        ("publish", None),
        ("oof", "deleted"),
    ]
    assert [m.get_command() for m in drain(client.bookmark_subscribe("orders", "0"))] == ["publish"]
    (chat,) = drain(client.bookmark_subscribe("chat", "0"))
    assert json.loads(chat.get_data()) == {"text": "hello"}


def test_resume_after_restart(tmp_path, clock):
    config = tmp_path / "amps.xml"
    config.write_text(CONFIG)

    def start() -> SowStore:
        store = SowStore.from_config(config, base_dir=tmp_path, clock=clock)
        AMPS.reset()
        AMPS.attach(store, URI)  # with the journal of its <TransactionLog>
        return store

    store = start()
    client = connected(URI, "first-life")
    for i in range(1, 4):
        client.publish("orders", json.dumps({"id": i}))
    seen = drain(client.bookmark_subscribe("orders", "0"))
    saved = seen[-2].get_bookmark()  # processed 1 and 2 before the "crash"
    client.publish("orders", '{"id": 4}')
    store.close()

    store = start()
    client = connected(URI, "second-life")
    client.publish("orders", '{"id": 5}')
    assert ids(drain(client.bookmark_subscribe("orders", saved))) == [3, 4, 5]
    store.close()
    AMPS.reset()


def test_resume_example_survives_sigkill():
    example = Path(__file__).resolve().parents[2] / "examples" / "resume_from_bookmark.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "exactly once" in done.stdout
