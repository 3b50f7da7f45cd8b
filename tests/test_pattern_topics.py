"""Regular-expression topics (spec §6.6) and RecoveryPoint handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import ConfigError, UnknownTopicError

CONFIG = """
<AMPSConfig><SOW>
  <Topic><Name>prices</Name><MessageType>json</MessageType><Pattern>/prices/.*</Pattern>
    <Key>/sym</Key><FileName>sow/%n.sow</FileName></Topic>
  <Topic><Name>/prices/fixed</Name><MessageType>json</MessageType><Key>/id</Key>
    <FileName>sow/%n.sow</FileName></Topic>
</SOW></AMPSConfig>
"""


def test_names_matching_a_pattern_are_separate_topics(tmp_path: Path) -> None:
    with SowStore.from_config(CONFIG, base_dir=tmp_path / "s") as store:
        a = store.topic("/prices/XYZ")
        b = store.topic("/prices/ABC")
        a.publish({"sym": "XYZ", "px": 1})
        b.publish({"sym": "XYZ", "px": 2})  # own keys, own records
        assert len(a) == 1
        assert len(b) == 1
        assert a.key_for({"sym": "XYZ"}) != b.key_for({"sym": "XYZ"})
        got = sorted((r.topic, r.doc["px"]) for r in store.sow("/prices/.*", "/px > 0"))
        assert got == [("/prices/ABC", 2), ("/prices/XYZ", 1)]


def test_an_ordinary_topic_matches_exactly_and_wins(tmp_path: Path) -> None:
    with SowStore.from_config(CONFIG, base_dir=tmp_path / "s") as store:
        assert store.topic("/prices/fixed").config.keys == ("/id",)
        with pytest.raises(UnknownTopicError):
            store.topic("/other/XYZ")


def test_pattern_members_survive_reopen(tmp_path: Path) -> None:
    with SowStore.from_config(CONFIG, base_dir=tmp_path / "s") as store:
        store.topic("/prices/XYZ").publish({"sym": "XYZ", "px": 1})
    with SowStore(tmp_path / "s") as store:
        assert len(store.topic("/prices/XYZ")) == 1


def test_a_recovery_point_that_is_no_log_position_is_refused() -> None:
    xml = (
        "<SOW><Topic><Name>t</Name><MessageType>json</MessageType><Key>/id</Key>"
        "<Durability>transient</Durability><RecoveryPoint>yesterday</RecoveryPoint></Topic></SOW>"
    )
    with pytest.raises(ConfigError):
        SowStore.from_config(xml)
    ok = xml.replace("yesterday", "now")
    with SowStore.from_config(ok) as store:
        assert len(store.topic("t")) == 0
