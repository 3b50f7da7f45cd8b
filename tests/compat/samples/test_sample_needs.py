"""What the official samples needed from ``sowlib.compat``, shown by programs in their idiom.

These run without the downloaded samples: an expired record reaches an idle
subscriber (``AMPSSOWandSubscribeWithOOF``), and a restarted bookmark subscriber
resumes from its bookmark file without naming a subscription id
(``AMPSSubscribeForReplay``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.compat.expiry import ExpirySweeper
from sowlib.journal import Journal

URI = "tcp://127.0.0.1:9027/amps/json"


@pytest.fixture
def live_store(tmp_path: Path) -> Iterator[SowStore]:
    """A store on the real clock (the sweep runs on a real timer thread)."""
    store = SowStore(tmp_path / "sow")
    store.create_topic("quotes", keys="/id", expiration="enabled")
    store.create_topic("plain", keys="/id")
    AMPS.reset()
    AMPS.attach(store, URI)
    yield store
    AMPS.reset()
    store.close()


def sweeper_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sowlib-compat-expiry" and t.is_alive()]


def test_an_idle_subscriber_receives_the_expired_oof(live_store: SowStore) -> None:
    watcher = AMPS.Client("watcher")
    watcher.connect(URI)
    watcher.logon()
    stream = watcher.sow_and_subscribe(topic="quotes", filter="/px > 0", oof_enabled="true")
    assert isinstance(stream, AMPS.MessageStream)
    updater = AMPS.Client("updater")
    updater.connect(URI)
    updater.logon()
    m = updater.allocate_message()
    m.set_command("publish")
    m.set_topic("quotes")
    m.set_expiration("0.3")
    m.set_data('{"id": 1, "px": 10}')
    updater.send(m)
    started = time.monotonic()
    seen = []
    # nothing touches the store from here on: only the hub's sweep can expire the record
    for message in stream.timeout(100):
        if message is not None and message.get_command() == "oof":
            seen.append((message.get_reason(), message.get_data()))
            break
        assert time.monotonic() - started < 10, "no expired OOF within 10 s"
    assert seen == [("expired", '{"id": 1, "px": 10}')]
    assert time.monotonic() - started >= 0.3
    assert live_store.topic("quotes").sow() == []
    watcher.close()
    updater.close()


def test_a_query_starts_the_sweep_reset_stops_it_and_a_plain_topic_starts_none(
    live_store: SowStore,
) -> None:
    client = AMPS.Client("plain")
    client.connect(URI)
    client.publish("plain", '{"id": 1}')
    assert sweeper_threads() == []  # no topic that can expire was used
    client.sow("quotes")
    assert len(sweeper_threads()) == 1
    AMPS.reset()
    assert sweeper_threads() == []


def test_a_sweeper_drops_a_closed_topic(tmp_path: Path) -> None:
    store = SowStore(tmp_path / "sow")
    topic = store.create_topic("quotes", keys="/id", expiration="enabled")
    sweeper = ExpirySweeper(interval=60)
    sweeper.watch(topic)
    assert sweeper.running
    topic.publish('{"id": 1}', expiration=0.01)
    time.sleep(0.05)
    assert sweeper.sweep() == 1
    store.close()
    assert sweeper.sweep() == 0
    assert not sweeper.watching(topic)
    assert not sweeper.running  # nothing left to sweep: the thread stopped
    store2 = SowStore(tmp_path / "sow2")
    sweeper.watch(store2.create_topic("q", keys="/id", expiration="enabled"))
    assert sweeper.running
    sweeper.close()
    assert not sweeper.running
    store2.close()


def test_a_restarted_bookmark_subscriber_resumes_from_its_file(tmp_path: Path) -> None:
    store = SowStore(tmp_path / "sow")
    journal = Journal(tmp_path / "journal", ["history"])
    AMPS.reset()
    AMPS.attach(store, URI, journal=journal)
    try:
        publisher = AMPS.Client("publisher")
        publisher.connect(URI)
        for n in range(1, 7):
            publisher.publish("history", f'{{"n": {n}}}')

        def run_once() -> list[int]:
            """One run of the program: three messages, each discarded, then exit."""
            got: list[int] = []
            client = AMPS.HAClient("replayer")  # the same name: a restarted program
            chooser = AMPS.DefaultServerChooser()
            chooser.add(URI)
            client.set_server_chooser(chooser)
            client.set_bookmark_store(AMPS.MMapBookmarkStore(str(tmp_path / "bookmarks")))
            client.connect_and_logon()

            def on_message(message: AMPS.Message) -> None:
                if len(got) < 3:
                    got.append(int(message.get_data().split(":")[1].strip(" }")))
                    client.discard(message)

            client.bookmark_subscribe(on_message, "history", client.Bookmarks.MOST_RECENT)
            client.close()
            return got

        assert run_once() == [1, 2, 3]
        assert run_once() == [4, 5, 6]
    finally:
        AMPS.reset()
        journal.close()
        store.close()
