"""Bookmark stores as the AMPS developer guide uses them: a subscriber logs what it
received, discards what it processed, and resumes with ``MOST_RECENT``, in one process
and across restarts of separate processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from tests.compat.conftest import CONFIG

ROOT = Path(__file__).resolve().parents[2]


def connected(uri, name, bookmark_store=None):
    client = AMPS.Client(name)
    if bookmark_store is not None:
        client.set_bookmark_store(bookmark_store)
    client.connect(uri)
    client.logon()
    return client


def publish(client, *ids):
    for i in ids:
        client.publish("orders", json.dumps({"id": i}))


def test_most_recent_resumes_after_what_was_discarded(uri):
    publisher = connected(uri, "publisher")
    publish(publisher, 1, 2, 3)
    client = connected(uri, "subscriber", AMPS.MemoryBookmarkStore())
    processed = []

    def on_message(message):
        processed.append(json.loads(message.get_data())["id"])
        client.ack(message)  # processed: discard it from the bookmark store

    client.bookmark_subscribe(
        on_message, "orders", AMPS.Client.Bookmarks.MOST_RECENT, sub_id="orders-feed"
    )
    assert processed == [1, 2, 3]
    client.unsubscribe("orders-feed")
    publish(publisher, 4, 5)
    client.bookmark_subscribe(
        on_message, "orders", AMPS.Client.Bookmarks.MOST_RECENT, sub_id="orders-feed"
    )
    publish(publisher, 6)
    assert processed == [1, 2, 3, 4, 5, 6]


def test_a_message_not_discarded_is_delivered_again(uri):
    publisher = connected(uri, "publisher")
    publish(publisher, 1, 2, 3, 4)
    store = AMPS.MemoryBookmarkStore()
    client = connected(uri, "subscriber", store)
    received = []
    for message in client.bookmark_subscribe("orders", "0", sub_id="feed").timeout(10):
        if message is None:
            break
        received.append(message)
    received[0].ack()  # Message.ack(), as the newer client writes it
    store.discard_message(received[2])  # 2 is still unprocessed: the resume point stays at 1
    assert not store.is_discarded(received[1])
    assert store.is_discarded(received[2])
    client.unsubscribe("feed")
    again = []
    client.bookmark_subscribe(
        lambda m: again.append(json.loads(m.get_data())["id"]),
        "orders",
        AMPS.Client.Bookmarks.MOST_RECENT,
        sub_id="feed",
    )
    assert again == [2, 3, 4]


def test_auto_ack_discards_when_the_handler_returns(uri):
    publisher = connected(uri, "publisher")
    publish(publisher, 1, 2, 3)
    store = AMPS.MemoryBookmarkStore()
    client = connected(uri, "auto", store)
    client.set_auto_ack(True)
    seen = []

    def on_message(message):
        number = json.loads(message.get_data())["id"]
        if number == 3:
            raise RuntimeError("cannot process 3")
        seen.append(number)

    client.set_exception_listener(lambda e: seen.append(str(e)))
    client.bookmark_subscribe(on_message, "orders", "0", sub_id="auto-feed")
    assert seen == [1, 2, "cannot process 3"]
    assert store.get_oldest_bookmark_seq("auto-feed") == 3  # 3 was not acknowledged
    client.unsubscribe("auto-feed")
    client.set_exception_listener(None)
    resumed = []
    client.bookmark_subscribe(
        lambda m: resumed.append(json.loads(m.get_data())["id"]),
        "orders",
        AMPS.Client.Bookmarks.MOST_RECENT,
        sub_id="auto-feed",
    )
    assert resumed == [3]


def test_ha_client_discard_and_purge(uri):
    publisher = connected(uri, "publisher")
    publish(publisher, 1, 2)
    store = AMPS.MemoryBookmarkStore()
    client = AMPS.HAClient("ha-subscriber")
    client.set_bookmark_store(store)
    chooser = AMPS.DefaultServerChooser()
    chooser.add(uri)
    client.set_server_chooser(chooser)
    client.connect_and_logon()
    client.bookmark_subscribe(client.discard, "orders", "0", sub_id="ha-feed")
    assert store.get_most_recent("ha-feed").count("|") == 2  # a journal bookmark
    store.purge("ha-feed")
    assert store.get_most_recent("ha-feed") == AMPS.Client.Bookmarks.EPOCH
    client.unsubscribe()


def test_set_bookmark_store_refuses_what_is_not_one(uri):
    client = connected(uri, "x")
    with pytest.raises(AMPS.UsageException, match="not a store"):
        client.set_bookmark_store("bookmarks.mmap")
    client.set_bookmark_store(None)
    assert client.get_bookmark_store() is None


def test_a_corrupt_bookmark_file_is_reported(tmp_path):
    path = tmp_path / "bad.mmap"
    path.write_text("this is not a bookmark file\n")
    with pytest.raises(AMPS.LocalStorageError, match="line 1"):
        AMPS.MMapBookmarkStore(str(path))
    torn = tmp_path / "torn.mmap"
    torn.write_text('["feed", "1|2|"]\n["feed", "1|3')  # a write cut short at the end
    assert AMPS.LoggedBookmarkStore(str(torn)).get_most_recent("feed") == "1|2|"


SUBSCRIBER = textwrap.dedent(
    """
    import json, sys
    import sowlib.compat as AMPS
    from sowlib import SowStore

    config, store_file, first, last, stop_at = sys.argv[1:6]
    store = SowStore.from_config(config)
    AMPS.attach(store, "tcp://127.0.0.1:9007/amps/json")
    client = AMPS.Client("restartable")
    client.set_bookmark_store(AMPS.MMapBookmarkStore(store_file))
    client.connect("tcp://127.0.0.1:9007/amps/json")
    client.logon()
    for i in range(int(first), int(last) + 1):
        client.publish("orders", json.dumps({"id": i}))
    processed = []

    def on_message(message):
        number = json.loads(message.get_data())["id"]
        if number > int(stop_at):
            return  # the "crash": received, never processed
        processed.append(number)
        client.ack(message)

    client.bookmark_subscribe(
        on_message, "orders", AMPS.Client.Bookmarks.MOST_RECENT, sub_id="orders-feed"
    )
    print(json.dumps(processed))
    client.close()
    store.close()
    """
)


def run(config, store_file, first, last, stop_at):
    args = [str(a) for a in (config, store_file, first, last, stop_at)]
    done = subprocess.run(
        [sys.executable, "-c", SUBSCRIBER, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_mmap_bookmark_store_resumes_across_process_restarts(tmp_path):
    config = tmp_path / "amps.xml"
    config.write_text(CONFIG)
    store_file = tmp_path / "orders-feed.mmap"
    assert run(config, store_file, 1, 5, stop_at=3) == [1, 2, 3]
    assert run(config, store_file, 6, 7, stop_at=99) == [4, 5, 6, 7]
    assert run(config, store_file, 8, 8, stop_at=99) == [8]
