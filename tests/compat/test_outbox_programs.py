"""Publishing from a read-only process, as AMPS programs in two processes do.

Spec (AMPS): a publish to a topic without a SOW reaches every subscriber of the
topic, whichever process (client) it runs in, once. The test process is the
writer (its store attached to the URI); the publishers and other subscribers are
separate Python processes (``peer.py``) that open the store read-only.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.journal.outbox import ChannelWriter, outbox_directory
from tests.compat.processes import QUEUE_CONFIG, URI, Peer, start, writer_client

pytestmark = pytest.mark.slow  # subprocesses

WAIT = 30.0


class Received:
    """What a handler in this (the writer's) process got, waited for by count."""

    def __init__(self) -> None:
        self.items: list[AMPS.Message] = []
        self._cond = threading.Condition()

    def __call__(self, message: AMPS.Message) -> None:
        with self._cond:
            self.items.append(message)
            self._cond.notify_all()

    def wait(self, count: int) -> list[str]:
        with self._cond:
            self._cond.wait_for(lambda: len(self.items) >= count, WAIT)
            return [m.get_data() for m in self.items]


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[AMPS.Client]:
    yield from writer_client(tmp_path, "writer-side")


def finish(peer: Peer) -> None:
    """Wait for a publisher peer's ``done``."""
    line = peer.line()
    assert line == "done", line + peer.rest()
    assert peer.proc.wait(WAIT) == 0, peer.rest()


def test_a_read_only_publisher_reaches_the_writer_and_another_read_only_process(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    got = Received()
    writer.subscribe(got, "news")
    other = start(peers, tmp_path, command="subscribe", topic="news", count=3, linger_ms=300)
    messages = [json.dumps({"n": n}) for n in range(3)]
    finish(start(peers, tmp_path, command="publish", topic="news", publish=messages))
    assert got.wait(3) == messages
    assert [m["data"] for m in other.messages()] == messages  # once each: no extra line
    time.sleep(0.2)
    assert len(got.items) == 3


def test_the_publishing_process_own_subscriber_gets_its_publish_once(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """The sender's subscribers get it at once, and not again from the writer."""
    got = Received()
    writer.subscribe(got, "ticks")
    messages = [json.dumps({"n": n}) for n in range(5)]
    peer = start(
        peers,
        tmp_path,
        command="subscribe",
        topic="ticks",
        count=5,
        linger_ms=500,
        publish=messages,
    )
    assert [m["data"] for m in peer.messages()] == messages
    assert got.wait(5) == messages


def test_a_read_only_publish_to_a_journalled_topic_is_journalled_by_the_writer(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """``chat`` is recorded by the transaction log: the writer journals the reader's
    publish, and the reader's own subscriber gets it from the journal, once."""
    got = Received()
    writer.bookmark_subscribe(got, "chat", "0")
    peer = start(
        peers,
        tmp_path,
        command="subscribe",
        topic="chat",
        count=2,
        linger_ms=300,
        publish=['{"t": "a"}', '{"t": "b"}'],
    )
    assert [m["data"] for m in peer.messages()] == ['{"t": "a"}', '{"t": "b"}']
    assert got.wait(2) == ['{"t": "a"}', '{"t": "b"}']
    assert all(m.get_bookmark() for m in got.items)


def test_with_no_writer_serving_a_read_only_publish_raises(tmp_path: Path) -> None:
    """[R] No writer process has the store attached: the publish raises
    DisconnectedException and nothing is written for later."""
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path).close()
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    AMPS.reset()
    AMPS.attach(reader, URI)
    client = AMPS.Client("reader")
    try:
        client.connect(URI)
        client.logon()
        with pytest.raises(AMPS.DisconnectedException, match="no writer process serves"):
            client.publish("news", '{"n": 1}')
        with pytest.raises(AMPS.DisconnectedException):
            client.publish("chat", '{"t": "journalled topic"}')
        assert not list(Path(outbox_directory(str(tmp_path))).glob("*.log"))
    finally:
        client.close()
        AMPS.reset()
        reader.close()


def test_a_damaged_outbox_channel_is_kept_and_reported_and_others_go_on(
    writer: AMPS.Client, tmp_path: Path, peers: list[Peer]
) -> None:
    """A corrupt channel file: the writer stops reading it, keeps it as ``*.damaged``
    and says why; every other channel is still served."""
    box = Path(outbox_directory(str(tmp_path)))
    bad = ChannelWriter(str(box), f"{os.getpid() + 1}-feedbeef-0.out")
    bad.append("news", "json", b'{"n": "first"}', op="publish")
    bad.append("news", "json", b'{"n": "second"}', op="publish")
    path = next(box.glob("*feedbeef*.log"))
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0xFF  # the checksum of the second request fails
    raw += b"\x00" * 64  # ... and data follows it: damage, not a torn tail
    path.write_bytes(bytes(raw))
    got = Received()
    writer.subscribe(got, "news")
    finish(start(peers, tmp_path, command="publish", topic="news", publish=['{"n": "ok"}']))
    assert got.wait(1)[-1] == '{"n": "ok"}'
    deadline = time.monotonic() + WAIT
    while not list(box.glob("*feedbeef*.error")) and time.monotonic() < deadline:
        time.sleep(0.01)
    (error,) = box.glob("*feedbeef*.error")
    assert "bad channel frame" in error.read_text()
    (kept,) = box.glob("*feedbeef*.damaged")
    assert kept.read_bytes() == bytes(raw)  # nothing of it lost
    bad.close()


def test_a_damaged_channel_is_reported_to_its_own_process(
    writer: AMPS.Client, tmp_path: Path
) -> None:
    """In one process: the reader's next publish raises PublishException, the one
    after goes through a new channel."""
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    uri = "tcp://127.0.0.1:9108/amps/json"
    AMPS.attach(reader, uri)
    client = AMPS.Client("reader")
    got = Received()
    writer.subscribe(got, "news")
    try:
        client.connect(uri)
        client.logon()
        client.publish("news", '{"n": 1}')
        assert got.wait(1) == ['{"n": 1}']
        box = Path(outbox_directory(str(tmp_path)))
        (path,) = box.glob("*.out.*.log")
        with path.open("ab") as fh:  # a stray writer's garbage, then more data
            fh.write(b"\x30\x00\x00\x00" + b"\x01" * 60)
        deadline = time.monotonic() + WAIT
        while not list(box.glob("*.error")) and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(AMPS.PublishException, match="could not read"):
            client.publish("news", '{"n": 2}')
        client.publish("news", '{"n": 3}')
        assert got.wait(2) == ['{"n": 1}', '{"n": 3}']
        assert list(box.glob("*.damaged"))
    finally:
        client.close()
        reader.close()


def test_a_restarted_writer_does_not_repeat_what_an_earlier_one_published(
    tmp_path: Path,
) -> None:
    """[R] The reader lives on across a writer restart: its earlier publishes are not
    published again by the new writer; its next one is. (One process for brevity:
    the reader's store is attached to its own URI.)"""
    (tmp_path / "amps.xml").write_text(QUEUE_CONFIG)
    first = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
    AMPS.reset()
    AMPS.attach(first, URI)
    reader = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path, readonly=True)
    uri = "tcp://127.0.0.1:9110/amps/json"
    AMPS.attach(reader, uri)
    client = AMPS.Client("reader")
    client.connect(uri)
    client.logon()
    try:
        before = Received()
        w1 = AMPS.Client("w1")
        w1.connect(URI)
        w1.logon()
        w1.subscribe(before, "news")
        client.publish("news", '{"n": "old"}')
        assert before.wait(1) == ['{"n": "old"}']
        w1.close()
        first.close()
        second = SowStore.from_config(tmp_path / "amps.xml", base_dir=tmp_path)
        AMPS.attach(second, URI)
        after = Received()
        w2 = AMPS.Client("w2")
        w2.connect(URI)
        w2.logon()
        w2.subscribe(after, "news")
        deadline = time.monotonic() + WAIT
        while True:  # the first writer's lock is released at its follower's next poll
            try:
                client.publish("news", '{"n": "new"}')
                break
            except AMPS.DisconnectedException:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        assert after.wait(1) == ['{"n": "new"}']
        time.sleep(0.3)
        assert after.wait(1) == ['{"n": "new"}']  # the old one was not repeated
        w2.close()
        second.close()
    finally:
        client.close()
        AMPS.reset()
        reader.close()
