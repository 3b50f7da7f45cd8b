"""A server configuration with a transaction log, started the way an AMPS user starts one:
``SowStore.from_config("amps.xml")`` and nothing else, then client programs against it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.errors import ConfigError, ReadOnlyError

URI = "tcp://127.0.0.1:9007/amps/json"

SERVER = """\
<AMPSConfig>
  <Name>amps-config-test</Name>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>
  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <JournalSize>{size}</JournalSize>
    {extra}
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>chat</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
</AMPSConfig>
"""


def configure(tmp_path, size="1MB", extra=""):
    path = tmp_path / "amps.xml"
    path.write_text(SERVER.format(size=size, extra=extra))
    return path


def connected(name):
    client = AMPS.Client(name)
    client.connect(URI)
    client.logon()
    return client


def replay(client, topic):
    got = []
    for message in client.bookmark_subscribe(topic, AMPS.Client.Bookmarks.EPOCH).timeout(10):
        if message is None:
            break
        got.append(json.loads(message.get_data()))
    return got


def test_store_from_config_owns_the_journal_and_attach_uses_it(tmp_path):
    store = SowStore.from_config(configure(tmp_path))
    assert store.journal is not None
    assert store.journal.directory == str(tmp_path / "journal")
    AMPS.reset()
    AMPS.attach(store, URI)
    try:
        client = connected("publisher")
        client.publish("orders", '{"id": 1, "qty": 10}')
        client.publish("chat", '{"text": "hello"}')  # a pub/sub topic, journalled
        assert replay(client, "orders") == [{"id": 1, "qty": 10}]
        assert replay(client, "chat") == [{"text": "hello"}]
        client.close()
    finally:
        AMPS.reset()
        store.close()
    assert store.journal is None or store.journal.closed


def test_publishes_straight_to_the_store_are_journalled_too(tmp_path):
    with SowStore.from_config(configure(tmp_path)) as store:
        store.topic("orders").publish({"id": 7, "qty": 70})
        AMPS.reset()
        AMPS.attach(store, URI)
        assert replay(connected("reader"), "orders") == [{"id": 7, "qty": 70}]
        AMPS.reset()


def test_the_journal_survives_a_restart(tmp_path):
    config = configure(tmp_path)
    with SowStore.from_config(config) as store:
        AMPS.reset()
        AMPS.attach(store, URI)
        connected("first").publish("orders", '{"id": 1}')
    with SowStore.from_config(config) as store:
        AMPS.reset()
        AMPS.attach(store, URI)
        client = connected("second")
        client.publish("orders", '{"id": 2}')
        assert replay(client, "orders") == [{"id": 1}, {"id": 2}]
    AMPS.reset()


def test_journal_size_sets_the_size_of_one_journal_file(tmp_path):
    config = configure(tmp_path, size="64KB")
    with SowStore.from_config(config) as store:
        AMPS.reset()
        AMPS.attach(store, URI)
        client = connected("bulk")
        body = "x" * 1000
        for i in range(300):
            client.publish("orders", json.dumps({"id": i, "body": body}))
        AMPS.reset()
    segments = [f for f in os.listdir(tmp_path / "journal") if f.endswith(".log")]
    assert len(segments) >= 4  # ~300 KB in files of 64 KB


def test_file_size_and_journal_size_may_agree_but_not_differ(tmp_path):
    agreeing = configure(tmp_path, size="1MB", extra="<FileSize>1024KB</FileSize>")
    SowStore.from_config(agreeing).close()
    differing = configure(tmp_path, size="1MB", extra="<FileSize>2MB</FileSize>")
    with pytest.raises(ConfigError, match="JournalSize"):
        SowStore.from_config(differing)


def test_a_bad_journal_size_is_a_config_error_and_opens_nothing(tmp_path):
    with pytest.raises(ConfigError, match="JournalSize"):
        SowStore.from_config(configure(tmp_path, size="lots"))
    assert not (tmp_path / "journal").exists()


def test_passing_a_second_journal_for_the_same_store_is_refused(tmp_path):
    config = configure(tmp_path)
    with SowStore.from_config(config) as store:
        other = AMPS.Journal(tmp_path / "elsewhere", ["orders"])
        with pytest.raises(AMPS.UsageException, match="owns"):
            AMPS.attach(store, URI, journal=other)
        other.close()
        AMPS.attach(store, URI, journal=store.journal)  # the same one is fine
        AMPS.reset()


def test_a_read_only_store_follows_the_writers_journal_and_writes_nothing(tmp_path):
    config = configure(tmp_path)
    with SowStore.from_config(config) as writer:
        writer.topic("orders").publish({"id": 1})
        assert writer.journal is not None
        folder = writer.journal.directory
        before = {p.name: p.stat().st_size for p in Path(folder).iterdir()}
        with SowStore.from_config(config, readonly=True) as reader:
            assert reader.journal is not None
            assert reader.journal.directory == folder
            assert reader.journal.last_bookmark() == writer.journal.last_bookmark()
            with pytest.raises(ReadOnlyError):
                reader.journal.record("publish", "orders", "json", b"{}")
            assert len(reader.topic("orders")) == 1
        assert {p.name: p.stat().st_size for p in Path(folder).iterdir()} == before


def test_configuration_as_xml_text(tmp_path):
    text = SERVER.format(size="1MB", extra="").replace("./journal", str(tmp_path / "j"))
    with SowStore.from_config(text, base_dir=tmp_path / "store") as store:
        assert store.journal is not None
        assert store.journal.directory == str(tmp_path / "j")
