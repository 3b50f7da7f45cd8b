"""Subscribers in other processes, as AMPS programs: pub/sub topics, bookmark replay
continuing live, regular-expression topics, and what a read-only process refuses.

The test process is the writer (``SowStore.from_config`` of an AMPS configuration,
attached to the URI its client publishes to); each subscriber is a separate Python
process (``peer.py``) that opens the same store read-only and subscribes through
``sowlib.compat`` in the AMPS idiom. Spec: a publish to a topic without a SOW reaches
every matching subscriber and is stored nowhere; a bookmark subscription replays the
transaction log from its bookmark, then continues live.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from tests.compat.processes import QUEUE_CONFIG, URI, Peer, start, writer_client

pytestmark = pytest.mark.slow  # subprocesses


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[AMPS.Client]:
    """The writer's store (QUEUE_CONFIG) attached to URI, and a connected client."""
    yield from writer_client(tmp_path, "publisher")


def test_a_subscriber_process_receives_publishes_to_a_topic_without_a_sow(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    peer = start(peers, tmp_path, command="subscribe", topic="news", filter="/n > 1", count=2)
    for n in (1, 2, 3):
        writer.publish("news", json.dumps({"n": n}))
    writer.publish("orders", json.dumps({"id": 9, "n": 5}))  # a SOW topic: not "news"
    got = peer.messages()
    assert [json.loads(m["data"])["n"] for m in got] == [2, 3]
    assert {m["command"] for m in got} == {"publish"}
    assert {m["topic"] for m in got} == {"news"}


def test_two_subscriber_processes_each_get_every_message_in_order(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    a = start(peers, tmp_path, command="subscribe", topic="ticks", count=50)
    b = start(peers, tmp_path, command="subscribe", topic="ticks", count=50)
    for n in range(50):
        writer.publish("ticks", json.dumps({"n": n}))
    for peer in (a, b):
        assert [json.loads(m["data"])["n"] for m in peer.messages()] == list(range(50))


def test_a_regular_expression_subscription_covers_every_matching_pubsub_topic(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    peer = start(peers, tmp_path, command="subscribe", topic="^news\\..*", count=2)
    writer.publish("news.eu", '{"n": 1}')
    writer.publish("sports", '{"n": 2}')
    writer.publish("news.us", '{"n": 3}')
    assert [m["topic"] for m in peer.messages()] == ["news.eu", "news.us"]


def test_a_journalled_pubsub_topic_reaches_a_subscriber_process(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """``chat`` is recorded by the transaction log: the reader follows it there."""
    peer = start(peers, tmp_path, command="subscribe", topic="chat", count=2)
    writer.publish("chat", '{"t": "hi"}')
    writer.publish("chat", '{"t": "there"}')
    assert [json.loads(m["data"])["t"] for m in peer.messages()] == ["hi", "there"]


def test_a_bookmark_replay_in_another_process_continues_live_across_journal_files(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """EPOCH replays what the writer journalled, then live publishes follow with no gap
    or duplicate while the writer starts new journal files (2KB each)."""
    pad = "x" * 200
    for n in range(20):
        writer.publish("chat", json.dumps({"n": n, "pad": pad}))
    peer = start(
        peers, tmp_path, command="bookmark_subscribe", topic="chat", bookmark="0", count=40
    )
    for n in range(20, 40):
        writer.publish("chat", json.dumps({"n": n, "pad": pad}))
    got = peer.messages()
    assert [json.loads(m["data"])["n"] for m in got] == list(range(40))
    seqs = [int(m["bookmark"].split("|")[1]) for m in got]
    assert seqs == sorted(set(seqs))
    assert len(list((tmp_path / "journal").glob("journal-*.log"))) > 3


def test_a_bookmark_subscriber_process_resumes_after_a_bookmark(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    marks: list[str] = []
    writer.bookmark_subscribe(lambda m: marks.append(m.get_bookmark()), "chat", "0|1|")
    for n in range(5):
        writer.publish("chat", json.dumps({"n": n}))
    peer = start(
        peers, tmp_path, command="bookmark_subscribe", topic="chat", bookmark=marks[2], count=2
    )
    assert [json.loads(m["data"])["n"] for m in peer.messages()] == [3, 4]


def test_a_read_only_publish_without_a_serving_writer_journals_nothing(tmp_path: Path) -> None:
    """The writer's store is open but no hub serves it: the read-only publish raises
    and nothing reaches the journal."""
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    store = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    AMPS.reset()
    AMPS.attach(reader, URI)
    client = AMPS.Client("reader")
    try:
        client.connect(URI)
        client.logon()
        with pytest.raises(AMPS.DisconnectedException, match="no writer process serves"):
            client.publish("chat", '{"t": "from a reader"}')
        assert store.journal is not None
        assert [e.topic for e in store.journal.replay()] == []
    finally:
        client.close()
        AMPS.reset()
        reader.close()
        store.close()


def test_a_subscriber_process_keeps_receiving_across_a_writer_restart(
    tmp_path: Path, peers: list[Peer]
) -> None:
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)

    def publish_from_a_new_writer(numbers: range) -> None:
        store = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
        AMPS.reset()
        AMPS.attach(store, URI)
        client = AMPS.Client("publisher")
        client.connect(URI)
        client.logon()
        for n in numbers:
            client.publish("news", json.dumps({"n": n}))
        client.close()
        AMPS.reset()
        store.close()

    publish_from_a_new_writer(range(0))  # the store exists before the reader opens it
    peer = start(peers, tmp_path, command="subscribe", topic="news", count=6)
    publish_from_a_new_writer(range(3))
    publish_from_a_new_writer(range(3, 6))
    assert [json.loads(m["data"])["n"] for m in peer.messages()] == list(range(6))
