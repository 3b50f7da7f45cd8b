"""Issue 28 item 7: subscriptions under stress, as an application using the AMPS-style
client hit them: unsubscribing from a handler, handlers that publish or raise, regex
topics in bookmark subscriptions, a replay that fails on a damaged journal file."""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import sowlib.compat as AMPS
from sowlib import SowStore
from sowlib.errors import CorruptRecordError
from sowlib.journal import Journal
from sowlib.subscriptions import Message as Event

URI = "tcp://127.0.0.1:9100/amps/json"


@pytest.fixture(params=[["t", "u"], [".*"]], ids=["named", "pattern"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "j", request.param) as j:
        yield j


@pytest.fixture
def client(tmp_path: Path, journal: Journal) -> Iterator[AMPS.Client]:
    store = SowStore(str(tmp_path / "s"))
    store.create_topic("t", keys=["/id"])
    store.create_topic("u", keys=["/id"])
    AMPS.reset()
    AMPS.attach(store, URI, journal=journal)
    c = AMPS.Client("stress")
    c.connect(URI)
    c.logon()
    yield c
    AMPS.reset()
    store.close()


def publish(client: AMPS.Client, topic: str, ids: range) -> None:
    for i in ids:
        client.publish(topic, json.dumps({"id": i}))


def seq(message: AMPS.Message) -> int:
    return int(message.get_bookmark().split("|")[1])


def test_issue28_unsubscribe_from_a_handler_during_the_sow_part(client: AMPS.Client) -> None:
    publish(client, "t", range(100))
    got: list[AMPS.Message] = []

    def handler(message: AMPS.Message) -> None:
        got.append(message)
        if len(got) == 5:
            client.unsubscribe(message.get_sub_id())

    client.sow_and_subscribe(handler, "t", sub_id="a")
    publish(client, "t", range(100, 110))
    assert len(got) == 5  # 60-70 more arrived after the unsubscribe


def test_issue28_unsubscribe_from_a_handler_during_the_replay(client: AMPS.Client) -> None:
    publish(client, "t", range(100))
    got: list[AMPS.Message] = []

    def handler(message: AMPS.Message) -> None:
        got.append(message)
        if len(got) == 5:
            client.unsubscribe(message.get_sub_id())

    client.bookmark_subscribe(handler, "t", AMPS.Client.Bookmarks.EPOCH, sub_id="b")
    publish(client, "t", range(100, 110))
    assert len(got) == 5


@pytest.mark.parametrize("topic", [".*", "(t|u)"])
def test_issue28_bookmark_subscribe_with_a_regex_topic(client: AMPS.Client, topic: str) -> None:
    publish(client, "t", range(3))
    publish(client, "u", range(2))
    got: list[AMPS.Message] = []
    client.bookmark_subscribe(got.append, topic, AMPS.Client.Bookmarks.EPOCH)
    publish(client, "u", range(5, 6))
    assert sorted(m.get_topic() for m in got) == ["t", "t", "t", "u", "u", "u"]


def test_issue28_a_publishing_handler_keeps_journal_order_for_others(
    client: AMPS.Client,
) -> None:
    def echo(message: AMPS.Message) -> None:
        if message.get_topic() == "t":
            client.publish("u", message.get_data())

    seen: list[AMPS.Message] = []
    client.bookmark_subscribe(echo, "t", AMPS.Client.Bookmarks.NOW, sub_id="echo")
    client.bookmark_subscribe(seen.append, "(t|u)", AMPS.Client.Bookmarks.NOW, sub_id="all")
    publish(client, "t", range(20))
    order = [seq(m) for m in seen]
    assert len(order) == 40
    assert order == sorted(order)  # 20 of 40 were inverted


def test_issue28_a_publishing_callback_keeps_commit_order_for_others(tmp_path: Path) -> None:
    with SowStore() as store:
        topic = store.create_topic("t", keys=["/id"])

        def republish(event: Event) -> None:
            doc = json.loads(event.data)
            if doc["id"] < 100:
                topic.publish({"id": doc["id"] + 100})

        topic.subscribe(republish)
        seen: list[int] = []
        topic.subscribe(lambda event: seen.append(event.seq))
        for i in range(10):
            topic.publish({"id": i})
        assert len(seen) == 20
        assert seen == sorted(seen)


def test_issue28_bookmark_handler_errors_reach_the_exception_listener(
    client: AMPS.Client,
) -> None:
    errors: list[BaseException] = []
    client.set_exception_listener(errors.append)
    got: list[AMPS.Message] = []

    def handler(message: AMPS.Message) -> None:
        got.append(message)
        raise ValueError("handler failed")

    publish(client, "t", range(3))
    client.bookmark_subscribe(handler, "t", AMPS.Client.Bookmarks.EPOCH, sub_id="e")
    publish(client, "t", range(3, 5))
    assert len(got) == 5  # still subscribed
    assert len(errors) == 5
    assert all(isinstance(e, ValueError) for e in errors)


def test_issue28_a_raise_on_a_group_marker_keeps_the_subscription(client: AMPS.Client) -> None:
    errors: list[BaseException] = []
    client.set_exception_listener(errors.append)
    got: list[str] = []

    def handler(message: AMPS.Message) -> None:
        got.append(message.get_command())
        if message.get_command() == "group_begin":
            raise ValueError("marker")

    publish(client, "t", range(2))
    client.sow_and_subscribe(handler, "t", sub_id="g")  # raised and dropped it
    publish(client, "t", range(2, 3))
    assert got == ["group_begin", "sow", "sow", "group_end", "publish"]
    assert len(errors) == 1


def test_issue28_a_failed_bookmark_replay_leaves_nothing_registered(
    client: AMPS.Client, journal: Journal
) -> None:
    publish(client, "t", range(5))
    journal.flush()
    (segment,) = sorted(Path(journal.directory).glob("journal-*.log"))
    data = bytearray(segment.read_bytes())
    data[20] ^= 0xFF  # damage the first entry: the replay fails on it
    segment.write_bytes(bytes(data))
    got: list[AMPS.Message] = []
    with pytest.raises((CorruptRecordError, AMPS.AMPSException)):
        client.bookmark_subscribe(got.append, "t", AMPS.Client.Bookmarks.EPOCH, sub_id="d")
    publish(client, "t", range(5, 8))
    assert got == []
    # the id is free again: nothing of the failed subscription is left
    client.bookmark_subscribe(got.append, "t", AMPS.Client.Bookmarks.NOW, sub_id="d")
    publish(client, "t", range(8, 9))
    assert len(got) == 1


def test_issue28_a_journal_subscribe_that_fails_keeps_no_reference(journal: Journal) -> None:
    for i in range(5):
        journal.record("publish", "t", "json", json.dumps({"id": i}).encode())
    journal.flush()
    (segment,) = sorted(Path(journal.directory).glob("journal-*.log"))
    data = bytearray(segment.read_bytes())
    data[20] ^= 0xFF
    segment.write_bytes(bytes(data))

    class Callback:
        def __call__(self, entry: object) -> None:
            raise AssertionError("nothing may be delivered")

    callback = Callback()
    alive = weakref.ref(callback)
    with pytest.raises(CorruptRecordError):
        journal.subscribe(callback, "t", "0")
    del callback
    gc.collect()
    assert alive() is None  # the journal kept the subscription, queueing every entry


@pytest.mark.parametrize(
    ("topic", "expected"),
    [("orders.eu", ["orders.eu"]), ("orders.*", ["orders.eu", "ordersXeu"]), ("(t|u)", ["t", "u"])],
)
def test_issue28_journal_pattern_reads_a_topic_as_a_regex_only_with_regex_characters(
    tmp_path: Path, topic: str, expected: list[str]
) -> None:
    with Journal(tmp_path, [".*"]) as journal:
        for name in ("orders.eu", "ordersXeu", "t", "u"):
            journal.record("publish", name, "json", b"{}")
        got: list[str] = []
        journal.subscribe(lambda entry: got.append(entry.topic), topic, "0")
        assert got == expected
