"""StateStore: load at start, persist every N updates and on close."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from sowlib.errors import ConfigError, InvalidSowKeyError, MissingKeyFieldError, StoreClosedError
from sowlib.state import StateStore


@attrs.frozen
class Rec:
    sow_key: str
    doc: Any


class FakeTopic:
    """A topic keyed on /key (or publisher-keyed) recording every publish."""

    def __init__(self, keyed: bool = True, key_field: str = "key") -> None:
        self.name = "state"
        self.keyed = keyed
        self.key_field = key_field
        self.records: dict[str, Any] = {}
        self.publishes: list[Any] = []

    def key_for(self, message: Any) -> str:
        if not self.keyed:
            raise InvalidSowKeyError(None, "publisher must pass sow_key")
        if self.key_field not in message:
            raise MissingKeyFieldError(self.name, "/" + self.key_field, message)
        return "k:" + message[self.key_field]

    def publish(self, data: Any, *, sow_key: str | None = None) -> Any:
        key = self.key_for(data) if self.keyed else sow_key
        assert key is not None
        self.records[key] = data
        self.publishes.append(data)
        return key

    def get(self, sow_key: str) -> Rec | None:
        doc = self.records.get(sow_key)
        return None if doc is None else Rec(sow_key, doc)


@pytest.mark.parametrize("keyed", [True, False])
def test_state_survives_reopen(keyed: bool) -> None:
    topic = FakeTopic(keyed)
    with StateStore(topic, key="sink1") as state:
        state["batch"] = 7
    again = StateStore(topic, key="sink1")
    assert again["batch"] == 7
    assert again.version == 1
    assert StateStore(topic, key="other").snapshot() == {}


def test_persists_every_n_updates_and_on_close() -> None:
    topic = FakeTopic()
    state = StateStore(topic, key="q", every=3)
    state["a"] = 1
    state.update(b=2, c=3)
    assert topic.publishes == []
    assert state.pending == 2
    del state["a"]
    assert len(topic.publishes) == 1
    assert topic.publishes[-1]["state"] == {"b": 2, "c": 3}
    state["d"] = 4
    state.close()
    state.close()
    assert len(topic.publishes) == 2
    assert topic.publishes[-1] == {"key": "q", "state": {"b": 2, "c": 3, "d": 4}, "version": 2}
    with pytest.raises(StoreClosedError):
        state["e"] = 5


def test_close_without_changes_publishes_nothing() -> None:
    topic = FakeTopic()
    StateStore(topic, key="q").close()
    assert topic.publishes == []


def test_mapping_protocol() -> None:
    state = StateStore(FakeTopic(), key="q", every=100)
    state.update({"x": 1, "y": 2})
    assert sorted(state) == ["x", "y"]
    assert len(state) == 2
    assert state.get("z", 9) == 9
    assert "x" in state


@pytest.mark.parametrize("every", [0, -1, True, 1.5])
def test_every_must_be_positive_int(every: Any) -> None:
    with pytest.raises(ConfigError) as info:
        StateStore(FakeTopic(), key="q", every=every)
    assert info.value.where == "every"


def test_topic_keyed_on_other_fields_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        StateStore(FakeTopic(key_field="id"), key="q")
    assert info.value.where == "topic"


def test_publisher_keyed_topic_needs_base64_key() -> None:
    with pytest.raises(InvalidSowKeyError):
        StateStore(FakeTopic(keyed=False), key="not a key!")


def test_compound_key_on_callers_fields_and_flat_record() -> None:
    from sowlib import SowStore, StateStore

    topic = SowStore().create_topic("/ADMIN/bookmarks", keys=["/clientName", "/subId"])
    key = {"clientName": "app", "subId": "orders"}
    with StateStore(topic, key=key) as state:
        state["bookmark"] = "1|5|"
    (record,) = topic.sow()
    assert record.doc == {"clientName": "app", "subId": "orders", "bookmark": "1|5|"}
    assert StateStore(topic, key=key)["bookmark"] == "1|5|"
    assert StateStore(topic, key={"clientName": "app", "subId": "other"}).snapshot() == {}
    with pytest.raises(ConfigError):
        StateStore(topic, key={"clientName": "app"})  # /subId missing


def test_any_record_shape_through_two_functions() -> None:
    from sowlib import SowStore

    topic = SowStore().create_topic("cursor", keys=["/who"])

    def to_record(state: dict[str, Any]) -> dict[str, Any]:
        return {"who": "sink", "pos": {"offset": state.get("offset", 0)}}

    def from_record(doc: Any) -> dict[str, Any]:
        return {"offset": doc["pos"]["offset"]}

    with StateStore(topic, key="sink", to_record=to_record, from_record=from_record) as state:
        state["offset"] = 12
    assert topic.sow()[0].doc == {"who": "sink", "pos": {"offset": 12}}
    again = StateStore(topic, key="sink", to_record=to_record, from_record=from_record)
    assert again["offset"] == 12
    with pytest.raises(ConfigError):
        StateStore(topic, key="sink", to_record=to_record)


def test_state_store_is_exported() -> None:
    import sowlib

    assert sowlib.StateStore is StateStore
    assert "StateStore" in sowlib.__all__
