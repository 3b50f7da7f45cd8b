"""Configuration on restart: an edited AMPS configuration applies to a stored topic."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import ConfigError, TopicExistsError


def config(topic_body: str, file_name: str = "./sow/%n.sow") -> str:
    return (
        "<AMPSConfig><SOW><Topic><Name>orders</Name><MessageType>json</MessageType>"
        f"<Key>/id</Key><FileName>{file_name}</FileName>{topic_body}</Topic></SOW></AMPSConfig>"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def fill(store: SowStore) -> None:
    orders = store.topic("orders")
    for i in range(20):
        orders.publish({"id": i, "region": "EU" if i % 2 else "US", "px": i})


def test_added_and_removed_indexes_apply_on_restart(tmp_path: Path) -> None:
    amps = write(tmp_path / "amps.xml", config("<HashIndex><Key>/region</Key></HashIndex>"))
    with SowStore.from_config(amps) as store:
        fill(store)
        assert store.topic("orders").explain("/region = 'EU'").kind == "hash"
    write(amps, config("<Index>/px</Index>"))
    with SowStore.from_config(amps) as store:
        orders = store.topic("orders")
        assert orders.config.hash_indexes == ()
        assert orders.config.indexes == ("/px",)
        assert orders.explain("/px > 15").kind == "memo"
        assert orders.explain("/region = 'EU'").kind != "hash"
        assert len(orders.sow("/region = 'EU'")) == 10
    with SowStore(tmp_path) as store:  # the edited configuration was stored
        assert store.topic("orders").config.indexes == ("/px",)


def test_new_expiration_applies_to_later_publishes(tmp_path: Path) -> None:
    now = [1000.0]
    amps = write(tmp_path / "amps.xml", config(""))
    with SowStore.from_config(amps, clock=lambda: now[0]) as store:
        fill(store)
    write(amps, config("<Expiration>60s</Expiration>"))
    with SowStore.from_config(amps, clock=lambda: now[0]) as store:
        orders = store.topic("orders")
        orders.publish({"id": 100})
        now[0] += 61
        assert store.process_expirations() == 1  # the new record; stored ones keep "never"
        assert len(orders) == 20


def test_new_history_window_applies(tmp_path: Path) -> None:
    amps = write(tmp_path / "amps.xml", config(""))
    with SowStore.from_config(amps) as store:
        fill(store)
    write(amps, config("<History><Window>1d</Window></History>"))
    with SowStore.from_config(amps) as store:
        orders = store.topic("orders")
        assert orders.config.history_window == 86400
        before = orders.publish({"id": 1, "px": 1000}).seq
        orders.publish({"id": 1, "px": 2000})
        (old,) = orders.sow("/id = 1", bookmark=before)
        assert old.doc["px"] == 1000


@pytest.mark.parametrize(
    "edited",
    [
        config("").replace("<Key>/id</Key>", "<Key>/orderId</Key>"),
        config("<KeyDomain>other</KeyDomain>"),
        config("").replace("<MessageType>json</MessageType>", "<MessageType>xml</MessageType>"),
    ],
)
def test_key_and_message_type_changes_are_config_errors(tmp_path: Path, edited: str) -> None:
    amps = write(tmp_path / "amps.xml", config(""))
    with SowStore.from_config(amps) as store:
        fill(store)
    write(amps, edited)
    with pytest.raises(ConfigError) as info:
        SowStore.from_config(amps)
    assert "Restore the old" in str(info.value)
    with SowStore.from_config(write(amps, config(""))) as store:  # the data is untouched
        assert len(store.topic("orders")) == 20


def test_create_topic_with_changed_indexes_on_reopen(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        store.create_topic("t", keys=["/id"]).publish({"id": 1, "v": 5})
    with SowStore(tmp_path) as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/v"])
        assert topic.config.indexes == ("/v",)
        assert len(topic.sow("/v = 5")) == 1
        with pytest.raises(TopicExistsError):  # a second, different definition in one session
            store.create_topic("t", keys=["/id"], indexes=["/w"])


def test_from_config_file_without_base_dir_is_persistent(tmp_path: Path) -> None:
    amps = write(tmp_path / "amps.xml", config(""))
    with SowStore.from_config(amps) as store:
        assert store.path == str(tmp_path)
        fill(store)
    assert (tmp_path / "sow" / "orders.json.sow").exists()
    with SowStore.from_config(amps) as store:
        assert len(store.topic("orders")) == 20


def test_from_config_text_with_persistent_topics_needs_base_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SowStore.from_config(config(""))
    with SowStore.from_config(config(""), base_dir=tmp_path) as store:
        assert store.path == str(tmp_path)


@pytest.mark.parametrize("element", ["View", "ConflatedTopic", "Queue", "LocalQueue"])
def test_unsupported_sow_elements_are_named(element: str) -> None:
    xml = f"<SOW><{element}><Name>x</Name></{element}></SOW>"
    with pytest.raises(ConfigError) as info:
        SowStore.from_config(xml)
    assert element in str(info.value)
