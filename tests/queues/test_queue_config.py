"""``<Queue>`` definitions: what loads, what is refused with a ConfigError, bad calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.config.queues import QueueDef, queue_definitions
from sowlib.errors import ConfigError, NotJournaledError, QueryOptionError, SowError
from sowlib.journal import Journal
from sowlib.queues import find_queue, open_queue, queues_of

LOG = """<TransactionLog><JournalDirectory>./j</JournalDirectory>
<Topic><Name>work</Name><MessageType>json</MessageType></Topic></TransactionLog>"""


def config(queue: str, log: str = LOG) -> str:
    return f"<AMPSConfig><SOW>{queue}</SOW>{log}</AMPSConfig>"


def test_every_documented_element_is_read() -> None:
    (q,) = queue_definitions(
        config(
            "<Queue><Name>q</Name><MessageType>JSON</MessageType>"
            "<UnderlyingTopic>work</UnderlyingTopic><Semantics>at-most-once</Semantics>"
            "<LeasePeriod>2m</LeasePeriod><FairnessModel>proportional</FairnessModel>"
            "<MaxPerSubscriptionBacklog>5</MaxPerSubscriptionBacklog><MaxBacklog>50</MaxBacklog>"
            "<Expiration>1h</Expiration><Filter>/a = 1</Filter><MaxDeliveries>3</MaxDeliveries>"
            "<MaxCancels>2</MaxCancels><RecoveryPoint>now</RecoveryPoint>"
            "<FileBackedMetadata>true</FileBackedMetadata></Queue>"
        )
    )
    assert q == QueueDef(
        "q",
        "json",
        "work",
        "at-most-once",
        120.0,
        "proportional",
        5,
        50,
        3600.0,
        "/a = 1",
        3,
        2,
        "now",
    )


def test_defaults_and_synonyms() -> None:
    got = queue_definitions(
        config(
            "<LocalQueue><Name>a</Name><MessageType>json</MessageType></LocalQueue>"
            "<QueueDefinition><Name>b</Name><MessageType>json</MessageType></QueueDefinition>"
        )
    )
    assert [q.name for q in got] == ["a", "b"]
    assert got[0].topic == "a"  # no UnderlyingTopic: the queue's own name
    assert (got[0].semantics, got[0].lease_period, got[0].fairness) == (
        "at-least-once",
        300.0,
        "fast",
    )


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("<Semantics>exactly-once</Semantics>", "Semantics"),
        ("<FairnessModel>random</FairnessModel>", "FairnessModel"),
        ("<LeasePeriod>soon</LeasePeriod>", "LeasePeriod"),
        ("<MaxPerSubscriptionBacklog>0</MaxPerSubscriptionBacklog>", "MaxPerSubscriptionBacklog"),
        ("<Priority>/p</Priority>", "Priority"),
        ("<Colour>red</Colour>", "Colour"),
        ("<RecoveryPoint>yesterday</RecoveryPoint>", "RecoveryPoint"),
        ("<Semantics>at-most-once</Semantics><Semantics>at-most-once</Semantics>", "Semantics"),
    ],
)
def test_bad_elements_name_themselves(body: str, where: str) -> None:
    xml = config(f"<Queue><Name>q</Name><MessageType>json</MessageType>{body}</Queue>")
    with pytest.raises(ConfigError) as err:
        queue_definitions(xml)
    assert where in str(err.value)


def test_name_and_message_type_are_required() -> None:
    with pytest.raises(ConfigError, match="Name"):
        queue_definitions(config("<Queue><MessageType>json</MessageType></Queue>"))
    with pytest.raises(ConfigError, match="MessageType"):
        queue_definitions(config("<Queue><Name>q</Name></Queue>"))


def test_a_queue_needs_a_transaction_log_recording_its_topic(tmp_path: Path) -> None:
    queue = (
        "<Queue><Name>q</Name><MessageType>json</MessageType>"
        "<UnderlyingTopic>{}</UnderlyingTopic></Queue>"
    )
    with pytest.raises(ConfigError, match="TransactionLog"):
        SowStore.from_config(config(queue.format("work"), log=""), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="not recorded"):
        SowStore.from_config(config(queue.format("other")), base_dir=tmp_path)
    with SowStore.from_config(config(queue.format("work")), base_dir=tmp_path) as store:
        journal = store.journal
        assert isinstance(journal, Journal)  # a writer's
        assert [q.name for q in queues_of(journal)] == ["q"]
        assert find_queue(journal, "q", "xml") is None  # another message type


def test_python_equivalent_and_bad_calls(tmp_path: Path) -> None:
    journal = Journal(tmp_path, ["work"])
    try:
        queue = open_queue(journal, "todo", underlying_topic="work", lease_period=10)
        assert open_queue(journal, "todo", underlying_topic="work", lease_period=10) is queue
        with pytest.raises(ConfigError):
            open_queue(journal, "todo", underlying_topic="work", lease_period=20)
        with pytest.raises(NotJournaledError):
            open_queue(journal, "other", underlying_topic="elsewhere")
        journal.record("publish", "work", "json", json.dumps({"n": 1}).encode())
        got: list[Any] = []
        queue.subscribe(got.append)
        with pytest.raises(QueryOptionError):
            queue.ack(got[0].bookmark, "later")
        with pytest.raises(QueryOptionError):
            queue.ack("not a bookmark")
        with pytest.raises(QueryOptionError):
            queue.subscribe(got.append, max_backlog=0)
        assert len(queue) == 1  # nothing was lost to the bad calls
        assert queue.ack(got[0].bookmark) == 1
        assert queue.ack(got[0].bookmark) == 0  # already gone: ignored
    finally:
        journal.close()
    with pytest.raises(SowError):
        queue.ack("1|1|")


def test_a_damaged_state_file_is_reported(tmp_path: Path) -> None:
    journal = Journal(tmp_path, ["work"])
    queue = open_queue(journal, "todo", underlying_topic="work")
    path = next((tmp_path / "queues").glob("*.acks"))
    journal.close()
    path.write_text("garbage\n")
    journal = Journal(tmp_path, ["work"])
    try:
        with pytest.raises(SowError, match="queue state"):
            open_queue(journal, "todo", underlying_topic="work")
    finally:
        journal.close()
    assert queue.name == "todo"
