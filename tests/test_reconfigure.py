"""Reopening a persistent topic with an edited configuration (issue 14, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.config import TopicConfig
from sowlib.errors import ConfigError
from sowlib.reconfigure import (
    check_message_types,
    config_changes,
    rewrite_topic_header,
    store_dir_for,
)


def base(**kwargs: object) -> TopicConfig:
    return TopicConfig.make("orders", keys=["/id"], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "changed"),
    [
        ({}, ()),
        ({"indexes": ["/px"]}, ("indexes",)),
        ({"hash_indexes": [["/region"]]}, ("hash_indexes",)),
        ({"expiration": "30s"}, ("expiration_enabled", "default_ttl")),
        ({"durability": "sync"}, ("durability",)),
    ],
)
def test_changeable_fields(kwargs: dict[str, object], changed: tuple[str, ...]) -> None:
    assert config_changes(base(), base(**kwargs)) == changed


@pytest.mark.parametrize(
    "other",
    [
        TopicConfig.make("orders", keys=["/orderId"]),
        TopicConfig.make("orders", keys=["/id"], key_domain="x"),
        TopicConfig.make("orders", keys=["/id"], message_type="xml"),
        TopicConfig.make("orders", keys=["/id"], durability="transient"),
    ],
)
def test_fixed_fields_are_config_errors(other: TopicConfig) -> None:
    with pytest.raises(ConfigError) as info:
        config_changes(base(), other)
    assert "Restore the old setting" in str(info.value)


def test_rewritten_header_keeps_every_record(tmp_path: Path) -> None:
    store = SowStore(tmp_path)
    topic = store.create_topic("orders", keys=["/id"])
    for i in range(50):
        topic.publish({"id": i, "px": i})
    topic.sow_delete("/id < 10")
    path = str(topic.stats()["path"])
    store.close()
    rewrite_topic_header(path, base(indexes=["/px"], expiration="1h"))
    with SowStore(tmp_path) as again:
        reopened = again.topic("orders")
        assert reopened.config.indexes == ("/px",)
        assert reopened.config.default_ttl == 3600
        assert sorted(r.doc["id"] for r in reopened.sow()) == list(range(10, 50))
        assert reopened.explain("/px > 45").kind == "memo"


def test_store_dir_defaults_to_the_config_files_directory(tmp_path: Path) -> None:
    persistent = [base()]
    transient = [TopicConfig.make("t", durability="transient")]
    path = tmp_path / "amps.xml"
    assert store_dir_for(path, None, persistent) == str(tmp_path)
    assert store_dir_for(path, "elsewhere", persistent) == "elsewhere"
    assert store_dir_for("<SOW/>", None, transient) is None
    with pytest.raises(ConfigError):
        store_dir_for(b"<SOW/>", None, persistent)


def test_retyped_topic_is_refused() -> None:
    class Stored:
        name, message_type = "orders", "json"

    check_message_types([Stored()], [base(), TopicConfig.make("other", message_type="xml")])
    with pytest.raises(ConfigError):
        check_message_types([Stored()], [TopicConfig.make("orders", message_type="xml")])
