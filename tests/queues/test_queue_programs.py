"""Queue programs in the shape the AMPS Python developer guide shows: a publisher to the
underlying topic, consumers that ``subscribe(topic=queue, options="max_backlog=..")`` and
``message.ack()``, over a ``sample.xml``-shaped configuration with a ``<Queue>``.

Only the import line differs from a program written for the real client.
"""

# The programs here are in the AMPS client's untyped idiom: a stream item is a
# Message for them, and their lists are plain lists.
# mypy: disable-error-code="union-attr,var-annotated"
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore

SAMPLE = """\
<AMPSConfig>
  <Name>sample-queues</Name>
  <SOW>
    <Topic>
      <Name>messages-sow</Name><MessageType>json</MessageType>
      <Key>/messageNumber</Key><FileName>./sow/%n.sow</FileName>
    </Topic>
    <Queue>
      <Name>sample-queue</Name>
      <MessageType>json</MessageType>
      <Semantics>at-least-once</Semantics>
      <UnderlyingTopic>queue-topic</UnderlyingTopic>
      <FairnessModel>round-robin</FairnessModel>
      <MaxPerSubscriptionBacklog>10</MaxPerSubscriptionBacklog>
      <LeasePeriod>60s</LeasePeriod>
    </Queue>
  </SOW>
  <TransactionLog>
    <JournalDirectory>./journal/</JournalDirectory>
    <JournalSize>10MB</JournalSize>
    <Topic><Name>queue-topic</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>sample-queue</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
</AMPSConfig>
"""
URI = "tcp://127.0.0.1:9007/amps/json"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "sample.xml"
    path.write_text(SAMPLE)
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


def start_server(config: Path, clock: Clock) -> SowStore:
    store = SowStore.from_config(config, clock=clock)
    AMPS.reset()
    AMPS.attach(store, URI)
    return store


@pytest.fixture
def server(config: Path, clock: Clock):
    store = start_server(config, clock)
    yield store
    AMPS.reset()
    store.close()


def publisher(count: int, start: int = 0) -> None:
    client = AMPS.Client("queue-publisher")
    client.connect(URI)
    client.logon()
    for n in range(start, start + count):
        client.publish("queue-topic", json.dumps({"id": n, "task": f"job {n}"}))
    client.close()


def test_publisher_then_consumer_acks_each_message(server: SowStore) -> None:
    publisher(10)
    client = AMPS.Client("queue-consumer")
    client.connect(URI)
    client.logon()
    done = []
    for message in client.subscribe(topic="sample-queue", options="max_backlog=5"):
        done.append(json.loads(message.get_data())["id"])
        message.ack()
        if len(done) == 10:
            break
    client.close()
    assert done == list(range(10))
    # all acknowledged: a sow query of the queue finds nothing, a new consumer gets nothing
    checker = AMPS.Client("checker")
    checker.connect(URI)
    assert [m for m in checker.sow("sample-queue") if m.get_command() == "sow"] == []


def test_two_consumers_share_the_work_round_robin(server: SowStore) -> None:
    got: dict[str, list[int]] = {"a": [], "b": []}
    clients = []
    for name in got:
        client = AMPS.Client(f"worker-{name}")
        client.connect(URI)
        client.logon()
        client.set_auto_ack(True)
        client.set_ack_batch_size(10)

        def on_message(message, name=name):
            got[name].append(json.loads(message.get_data())["id"])

        client.subscribe(on_message, "sample-queue", options="max_backlog=10")
        clients.append(client)
    publisher(6)
    assert got == {"a": [0, 2, 4], "b": [1, 3, 5]}
    for client in clients:
        client.close()


def test_unacked_messages_go_to_another_consumer_when_one_closes(server: SowStore) -> None:
    publisher(3)
    first = AMPS.Client("first")
    first.connect(URI)
    stream = first.subscribe(topic="sample-queue", options="max_backlog=3")
    leased = [json.loads(m.get_data())["id"] for _, m in zip(range(3), stream, strict=False)]
    assert leased == [0, 1, 2]
    second = AMPS.Client("second")
    second.connect(URI)
    seen = []
    second.subscribe(
        lambda m: seen.append(json.loads(m.get_data())["id"]),
        "sample-queue",
        options="max_backlog=3",
    )
    assert seen == []  # all leased to the first
    first.close()  # the consumer goes away without acknowledging
    assert seen == [0, 1, 2]
    second.close()


def test_a_lease_that_expires_is_redelivered(server: SowStore, clock: Clock) -> None:
    publisher(1)
    client = AMPS.Client("slow")
    client.connect(URI)
    seen = []
    client.subscribe(seen.append, "sample-queue")
    assert len(seen) == 1
    assert seen[0].get_lease_period() == "20231114T221420.000000Z"  # now + LeasePeriod
    clock.now += 61  # LeasePeriod 60s
    client.publish("queue-topic", json.dumps({"id": 99}))  # any call touching the queue
    assert [json.loads(m.get_data())["id"] for m in seen] == [0, 0]
    seen[-1].ack()
    assert [json.loads(m.get_data())["id"] for m in seen] == [0, 0, 99]
    client.close()


def test_restart_between_a_lease_and_its_ack(config: Path, clock: Clock) -> None:
    store = start_server(config, clock)
    publisher(3)
    client = AMPS.Client("consumer")
    client.connect(URI)
    seen = []
    client.subscribe(seen.append, "sample-queue", options=AMPS.Message.Options.MaxBacklog(3))
    seen[1].ack()  # 1 is done; 0 and 2 are leased when the server stops
    AMPS.reset()
    store.close()

    store = start_server(config, clock)
    try:
        client = AMPS.Client("consumer-after-restart")
        client.connect(URI)
        again = []
        client.subscribe(again.append, "sample-queue", options="max_backlog=10")
        assert [json.loads(m.get_data())["id"] for m in again] == [0, 2]
        for message in again:
            message.ack()
        client.close()
    finally:
        AMPS.reset()
        store.close()
    store = start_server(config, clock)  # everything acknowledged: nothing comes back
    try:
        client = AMPS.Client("third")
        client.connect(URI)
        assert [m for m in client.sow("sample-queue") if m.get_command() == "sow"] == []
    finally:
        AMPS.reset()
        store.close()


def test_cancel_and_ack_by_command(server: SowStore) -> None:
    publisher(2)
    client = AMPS.Client("commands")
    client.connect(URI)
    seen = []
    client.subscribe(seen.append, "sample-queue")
    assert [json.loads(m.get_data())["id"] for m in seen] == [0]
    seen[0].ack("cancel")  # back to the queue: delivered again
    assert [json.loads(m.get_data())["id"] for m in seen] == [0, 0]
    cmd = AMPS.Command("sow_delete").set_topic("sample-queue").set_bookmark(seen[-1].get_bookmark())
    acks = list(client.execute(cmd))
    assert acks[0].get_records_deleted() == 1
    assert [json.loads(m.get_data())["id"] for m in seen] == [0, 0, 1]
    client.ack("sample-queue", seen[-1].get_bookmark())
    assert [m for m in client.sow("sample-queue") if m.get_command() == "sow"] == []
    client.close()


def test_sow_on_a_queue_lists_waiting_messages_without_leasing(server: SowStore) -> None:
    publisher(3)
    client = AMPS.Client("browser")
    client.connect(URI)
    rows = [
        json.loads(m.get_data())["id"]
        for m in client.sow("sample-queue", "/id >= 1")
        if m.get_command() == "sow"
    ]
    assert rows == [1, 2]
    seen = []
    client.subscribe(seen.append, "sample-queue")
    assert [json.loads(m.get_data())["id"] for m in seen] == [0]  # nothing was leased
    client.close()


def test_auto_ack_cancels_a_message_whose_handler_raises(server: SowStore) -> None:
    client = AMPS.Client("flaky")
    client.connect(URI)
    client.set_auto_ack(True)
    errors = []
    client.set_exception_listener(errors.append)
    calls = []

    def on_message(message):
        calls.append(json.loads(message.get_data())["id"])
        if len(calls) == 1:
            raise RuntimeError("first try fails")

    client.subscribe(on_message, "sample-queue")
    publisher(1)
    assert calls == [0]  # cancelled, not redelivered in the same call
    assert len(errors) == 1
    publisher(1, start=1)  # the next call touching the queue redelivers it
    assert calls == [0, 0, 1]
    client.close()


def test_consumers_in_threads_take_every_message_once(server: SowStore) -> None:
    total = 200
    got: list[int] = []
    lock = threading.Lock()
    done = threading.Event()
    clients = [AMPS.Client(f"worker-{i}") for i in range(3)]

    def consume(client) -> None:
        client.connect(URI)
        for message in client.subscribe(topic="sample-queue", options="max_backlog=4"):
            with lock:
                got.append(json.loads(message.get_data())["id"])
                if len(got) == total:
                    done.set()
            message.ack()

    workers = [threading.Thread(target=consume, args=(c,), daemon=True) for c in clients]
    for worker in workers:
        worker.start()
    publisher(total)
    assert done.wait(30)
    for client in clients:
        client.close()  # ends each stream, so each loop ends
    for worker in workers:
        worker.join(timeout=5)
    assert sorted(got) == list(range(total))


def test_sow_and_subscribe_and_delta_subscribe_on_a_queue(server: SowStore) -> None:
    publisher(2)
    client = AMPS.Client("mixed")
    client.connect(URI)
    seen = []
    client.sow_and_subscribe(seen.append, "sample-queue", options="max_backlog=1")
    commands = [
        (m.get_command(), json.loads(m.get_data())["id"] if m.get_data() else None) for m in seen
    ]
    # the query lists both waiting messages, then the subscription leases the first
    assert commands == [
        ("group_begin", None),
        ("sow", 0),
        ("sow", 1),
        ("group_end", None),
        ("publish", 0),
    ]
    other = AMPS.Client("delta")
    other.connect(URI)
    deltas = []
    other.delta_subscribe(deltas.append, "sample-queue")
    assert [json.loads(m.get_data()) for m in deltas] == [{"id": 1, "task": "job 1"}]
    client.close()
    other.close()


def test_at_most_once_queue(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "amo.xml"
    path.write_text(SAMPLE.replace("at-least-once", "at-most-once"))
    store = start_server(path, clock)
    try:
        publisher(3)
        client = AMPS.Client("once")
        client.connect(URI)
        seen = []
        client.subscribe(seen.append, "sample-queue")
        assert [json.loads(m.get_data())["id"] for m in seen] == [0, 1, 2]  # no backlog limit
        client.close()
        again = AMPS.Client("again")
        again.connect(URI)
        assert [m for m in again.sow("sample-queue") if m.get_command() == "sow"] == []
    finally:
        AMPS.reset()
        store.close()
