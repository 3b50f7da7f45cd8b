"""Queue consumers in read-only processes, as the official AMPSQueueConsumer runs.

Spec (AMPS_SEMANTICS, queues): at-least-once delivery; a message is leased to one
subscriber at a time; an acknowledged message is never delivered again; a
subscriber that goes away returns its leases, which are delivered to another.
The test process is the writer (``QUEUE_CONFIG``: queue ``work`` over the topic
``work-in``); the consumers are separate processes (``peer.py``) over the store
opened read-only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.journal import Journal
from sowlib.queues import Queue, find_queue
from tests.compat.processes import QUEUE_CONFIG, URI, Peer, start

pytestmark = pytest.mark.slow  # subprocesses

WAIT = 30.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SowStore]:
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    opened = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
    AMPS.reset()
    AMPS.attach(opened, URI)
    yield opened
    AMPS.reset()
    opened.close()


@pytest.fixture
def writer(store: SowStore) -> Iterator[AMPS.Client]:
    client = AMPS.Client("publisher")
    client.connect(URI)
    client.logon()
    yield client
    client.close()


def the_queue(store: SowStore) -> Queue:
    assert isinstance(store.journal, Journal)
    queue = find_queue(store.journal, "work", "json")
    assert queue is not None
    return queue


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def numbers(lines: list[dict[str, object]]) -> list[int]:
    return [json.loads(str(m["data"]))["n"] for m in lines]


def test_a_consumer_process_gets_each_message_once_and_its_acks_consume_them(
    writer: AMPS.Client, store: SowStore, tmp_path: Path, peers: list[Peer]
) -> None:
    """The official samples' shape: the publisher (writer) publishes, the consumer
    (read-only, another process) receives each message once and acknowledges it."""
    for n in range(20):
        writer.publish("work-in", json.dumps({"n": n}))
    peer = start(peers, tmp_path, command="queue", topic="work", count=20, linger_ms=300)
    got = peer.messages()
    assert numbers(got) == list(range(20))
    assert {m["topic"] for m in got} == {"work"}
    assert all(m["bookmark"] for m in got)
    queue = the_queue(store)
    wait_until(lambda: len(queue) == 0, "the consumer's acks did not empty the queue")


def test_messages_published_while_the_consumer_process_waits_reach_it(
    writer: AMPS.Client, store: SowStore, tmp_path: Path, peers: list[Peer]
) -> None:
    peer = start(peers, tmp_path, command="queue", topic="work", count=5, max_backlog=2)
    for n in range(5):
        writer.publish("work-in", json.dumps({"n": n}))
    assert numbers(peer.messages()) == list(range(5))
    queue = the_queue(store)
    wait_until(lambda: len(queue) == 0, "acks lost")


def test_two_consumer_processes_share_the_queue_each_message_to_one(
    writer: AMPS.Client, store: SowStore, tmp_path: Path, peers: list[Peer]
) -> None:
    a = start(peers, tmp_path, command="queue", topic="work", count=20, idle_ms=3000)
    b = start(peers, tmp_path, command="queue", topic="work", count=20, idle_ms=3000)
    for n in range(20):
        writer.publish("work-in", json.dumps({"n": n}))
    first, second = numbers(a.messages()), numbers(b.messages())
    assert sorted(first + second) == list(range(20))  # each once, none twice
    assert first, "a backlog of one each: both get work"
    assert second, "a backlog of one each: both get work"
    wait_until(lambda: len(the_queue(store)) == 0, "acks lost")


def test_a_consumer_process_killed_mid_lease_has_its_leases_redelivered(
    writer: AMPS.Client, store: SowStore, tmp_path: Path, peers: list[Peer]
) -> None:
    """Killed holding three leases (never acknowledged): they go to another subscriber
    (here one in the writer), as AMPS returns a disconnected subscriber's leases."""
    for n in range(3):
        writer.publish("work-in", json.dumps({"n": n}))
    doomed = start(
        peers,
        tmp_path,
        command="queue",
        topic="work",
        count=3,
        max_backlog=3,
        ack=False,
        linger_ms=60_000,
    )
    assert [numbers([json.loads(doomed.line())])[0] for _ in range(3)] == [0, 1, 2]
    queue = the_queue(store)
    assert queue.leased == 3
    got: list[AMPS.Message] = []
    arrived = threading.Event()

    def on_message(message: AMPS.Message) -> None:
        got.append(message)
        if len(got) == 3:
            arrived.set()

    writer.subscribe(on_message, "work", options="max_backlog=10")
    time.sleep(0.2)
    assert got == []  # leased to the living consumer process: not delivered again
    doomed.proc.kill()
    doomed.proc.wait(WAIT)
    assert arrived.wait(WAIT)
    assert sorted(json.loads(m.get_data())["n"] for m in got) == [0, 1, 2]
    for message in got:
        message.ack()
    wait_until(lambda: len(queue) == 0, "acks lost")


def test_an_acknowledged_message_is_never_delivered_again(
    writer: AMPS.Client, store: SowStore, tmp_path: Path, peers: list[Peer]
) -> None:
    for n in range(4):
        writer.publish("work-in", json.dumps({"n": n}))
    peer = start(peers, tmp_path, command="queue", topic="work", count=4)
    assert numbers(peer.messages()) == list(range(4))
    queue = the_queue(store)
    wait_until(lambda: len(queue) == 0, "acks lost")
    again = start(peers, tmp_path, command="queue", topic="work", count=1)
    writer.publish("work-in", json.dumps({"n": 99}))
    assert numbers(again.messages()) == [99]


def test_a_queue_the_writer_does_not_have_is_refused_in_the_consumer(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """The reader's configuration names a queue its writer's does not: the subscribe
    raises InvalidTopicException (the writer answers), nothing else is disturbed."""
    extra = QUEUE_CONFIG.replace(
        "  </SOW>",
        "    <Queue><Name>ghost</Name><MessageType>json</MessageType>"
        "<UnderlyingTopic>work-in</UnderlyingTopic></Queue>\n  </SOW>",
    )
    (tmp_path / "reader.xml").write_text(extra)
    peer = Peer(tmp_path, command="queue", topic="ghost", config=str(tmp_path / "reader.xml"))
    peers.append(peer)
    first = peer.line()
    assert first.startswith("error InvalidTopicException"), first + peer.rest()
    assert "no such queue" in first
    ok = start(peers, tmp_path, command="queue", topic="work", count=1)
    writer.publish("work-in", '{"n": 7}')
    assert numbers(ok.messages()) == [7]


def test_with_no_writer_serving_consuming_a_queue_raises(tmp_path: Path, peers: list[Peer]) -> None:
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path).close()
    peer = Peer(tmp_path, command="queue", topic="work")
    peers.append(peer)
    first = peer.line()
    assert first.startswith("error DisconnectedException"), first + peer.rest()


def test_browsing_a_queue_from_a_read_only_store_shows_what_is_not_leased(
    writer: AMPS.Client, store: SowStore, tmp_path: Path
) -> None:
    """In one process for brevity: a read-only store attached to its own URI."""
    for n in range(3):
        writer.publish("work-in", json.dumps({"n": n}))
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    uri = "tcp://127.0.0.1:9109/amps/json"
    AMPS.attach(reader, uri)
    client = AMPS.Client("browser")
    try:
        client.connect(uri)
        client.logon()
        found = [
            m
            for m in client.sow("work")
            if isinstance(m, AMPS.Message) and m.get_command() == "sow"
        ]
        assert [json.loads(m.get_data())["n"] for m in found] == [0, 1, 2]
        assert len(the_queue(store)) == 3  # browsing leased and consumed nothing
        with pytest.raises(AMPS.AMPSException, match="work"):
            client.subscribe("work", "/n = = 1")  # the writer refuses the filter
    finally:
        client.close()
        reader.close()


def test_a_lease_that_ends_unacknowledged_goes_to_another_subscriber(
    tmp_path: Path, peers: list[Peer]
) -> None:
    """``LeasePeriod`` 1s: the consumer process holds the message without acking; when
    the lease ends the writer gives it, round-robin, to the next subscriber, its own
    (the consumer process still lives: it is the lease, not the process, that ended)."""
    config = QUEUE_CONFIG.replace(
        "<UnderlyingTopic>work-in</UnderlyingTopic>",
        "<UnderlyingTopic>work-in</UnderlyingTopic><LeasePeriod>1s</LeasePeriod>"
        "<FairnessModel>round-robin</FairnessModel>",
    )
    (tmp_path / "amps.xml").write_text(config)
    store = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
    AMPS.reset()
    AMPS.attach(store, URI)
    client = AMPS.Client("publisher")
    try:
        client.connect(URI)
        client.logon()
        client.publish("work-in", '{"n": 1}')
        holder = start(
            peers, tmp_path, command="queue", topic="work", count=1, ack=False, linger_ms=60_000
        )
        assert numbers([json.loads(holder.line())]) == [1]
        got: list[AMPS.Message] = []
        arrived = threading.Event()

        def on_message(message: AMPS.Message) -> None:
            got.append(message)
            arrived.set()

        client.subscribe(on_message, "work")
        assert arrived.wait(WAIT)
        assert json.loads(got[0].get_data()) == {"n": 1}
        assert holder.proc.poll() is None  # still alive: only its lease ended
    finally:
        client.close()
        AMPS.reset()
        store.close()


def test_a_consumer_subscribes_again_after_a_writer_restart(tmp_path: Path) -> None:
    """[R] The subscription ends with the writer that held it; its unacknowledged
    message stays in the queue and a new subscription, served by the next writer,
    receives it. (One process for brevity: the reader attached to its own URI.)"""
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    first = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
    AMPS.reset()
    AMPS.attach(first, URI)
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    uri = "tcp://127.0.0.1:9111/amps/json"
    AMPS.attach(reader, uri)
    consumer = AMPS.Client("consumer")
    consumer.connect(uri)
    consumer.logon()
    try:
        w1 = AMPS.Client("w1")
        w1.connect(URI)
        w1.logon()
        w1.publish("work-in", '{"n": 1}')
        stream = consumer.subscribe("work")
        assert not isinstance(stream, str)
        message = next(iter(stream.timeout(int(WAIT * 1000))))
        assert message is not None
        assert json.loads(message.get_data()) == {"n": 1}  # leased, never acknowledged
        stream.close()
        w1.close()
        first.close()
        second = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
        AMPS.attach(second, URI)
        w2 = AMPS.Client("w2")
        w2.connect(URI)
        w2.logon()
        w2.publish("work-in", '{"n": 2}')
        deadline = time.monotonic() + WAIT
        while True:  # the first writer stops serving at its follower's next poll
            try:
                again = consumer.subscribe("work", options="max_backlog=5")
                break
            except AMPS.DisconnectedException:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        assert not isinstance(again, str)
        got = []
        for m in again.timeout(int(WAIT * 1000)):
            assert m is not None
            got.append(json.loads(m.get_data())["n"])
            m.ack()
            if len(got) == 2:
                break
        assert got == [1, 2]
        again.close()
        w2.close()
        second.close()
    finally:
        consumer.close()
        AMPS.reset()
        reader.close()
