"""Expiration (spec §10), sow_and_subscribe atomicity, historical queries, through real topics."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from sowlib.state import StateStore
from sowlib.store import SowStore
from sowlib.subscriptions import Message
from tests.conftest import FakeClock as Clock


def ids(topic: Any) -> list[int]:
    return sorted(r.doc["id"] for r in topic.sow())


def test_topic_default_lifetime(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"], expiration="30s")
    t.publish({"id": 1})
    clock.advance(29)
    assert ids(t) == [1]
    clock.advance(2)
    assert ids(t) == []


def test_enabled_expires_only_messages_with_their_own_expiration(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"], expiration="enabled")
    t.publish({"id": 1})
    t.publish({"id": 2}, expiration=5)
    clock.advance(1000)
    assert ids(t) == [1]


def test_disabled_ignores_per_message_expiration(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"])
    t.publish({"id": 1}, expiration=5)
    clock.advance(1000)
    assert ids(t) == [1]


def test_per_message_override_and_zero_means_never(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"], expiration="30s")
    t.publish({"id": 1}, expiration=100)
    t.publish({"id": 2}, expiration=0)
    t.publish({"id": 3}, expiration=10)
    clock.advance(11)
    assert ids(t) == [1, 2]
    clock.advance(90)
    assert ids(t) == [2]
    clock.advance(10**6)
    assert ids(t) == [2]


@pytest.mark.parametrize("delta", [False, True])
def test_update_resets_the_clock(clock: Clock, delta: bool) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"], expiration="45s")
    t.publish({"id": 1, "a": 1})
    clock.advance(15)
    (t.delta_publish if delta else t.publish)({"id": 1, "a": 2})
    clock.advance(40)  # 55s after the first publish, 40s after the update
    assert ids(t) == [1]
    clock.advance(6)
    assert ids(t) == []


def test_process_expirations_counts(clock: Clock) -> None:
    store = SowStore(clock=clock)
    t = store.create_topic("t", keys=["/id"], expiration="1s")
    for i in range(3):
        t.publish({"id": i})
    clock.advance(2)
    assert store.process_expirations() == 3
    assert len(t) == 0


def test_expired_while_closed_removed_at_startup(tmp_path: Path, clock: Clock) -> None:
    with SowStore(tmp_path, clock=clock) as store:
        t = store.create_topic("t", keys=["/id"], expiration="10s")
        t.publish({"id": 1})
        t.publish({"id": 2}, expiration=100)
    clock.advance(50)
    with SowStore(tmp_path, clock=clock) as store:
        t = store.topic("t")
        assert 1 not in [r.doc["id"] for r in t]
        assert ids(t) == [2]


def test_oof_expired_to_subscribers_that_received_the_record(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("t", keys=["/id"], expiration="10s")
    t.publish({"id": 1, "v": 1})
    got: list[Message] = []
    t.sow_and_subscribe(got.append, "/v = 1", oof=True)
    plain: list[Message] = []
    t.subscribe(plain.append, "/v = 1")
    clock.advance(11)
    t.process_expirations()
    assert [(m.command, m.reason) for m in got][-1] == ("oof", "expired")
    assert json.loads(got[-1].data) == {"id": 1, "v": 1}
    assert plain == []


def test_oof_match_and_deleted_through_topic() -> None:
    t = SowStore().create_topic("t", keys=["/id"])
    t.publish({"id": 1, "p": 5})
    t.publish({"id": 2, "p": 6})
    got: list[Message] = []
    t.sow_and_subscribe(got.append, "/p > 4", oof=True)
    t.delta_publish({"id": 1, "p": 1})
    t.sow_delete("/id = 2")
    oof = [(m.sow_key, m.reason, json.loads(m.data)) for m in got if m.command == "oof"]
    assert [(r, d) for _, r, d in oof] == [
        ("match", {"id": 1, "p": 1}),
        ("deleted", {"id": 2, "p": 6}),
    ]


def test_delta_subscription_through_topic() -> None:
    t = SowStore().create_topic("t", keys=["/id"])
    t.publish({"id": 1, "a": 1, "b": 1})
    got: list[Message] = []
    t.sow_and_subscribe(got.append, None, delta=True)
    t.delta_publish({"id": 1, "b": 2})
    assert got[-1].is_delta
    assert json.loads(got[-1].data) == {"id": 1, "b": 2}


def test_sow_and_subscribe_view_equals_final_state_under_concurrent_publishes() -> None:
    t = SowStore().create_topic("t", keys=["/id"])
    stop = threading.Event()

    def publisher(seed: int) -> None:
        rnd = random.Random(seed)
        n = 0
        while not stop.is_set() or n < 200:
            key = rnd.randrange(30)
            if rnd.random() < 0.15:
                t.sow_delete_by_data({"id": key})
            else:
                t.publish({"id": key, "v": rnd.randrange(10)})
            n += 1
            if n >= 2000:
                break

    threads = [threading.Thread(target=publisher, args=(s,)) for s in range(3)]
    for th in threads:
        th.start()
    view: dict[str, Any] = {}

    def apply(m: Message) -> None:
        if m.command in ("sow", "publish"):
            view[m.sow_key or ""] = m.doc
        elif m.command == "oof":
            view.pop(m.sow_key or "", None)

    t.sow_and_subscribe(apply, "/v >= 5", oof=True)
    stop.set()
    for th in threads:
        th.join()
    final = {r.sow_key: r.doc for r in t.sow("/v >= 5")}
    assert view == final


def test_historical_queries_match_a_model_of_every_version(clock: Clock) -> None:
    t = SowStore(clock=clock).create_topic("h", keys=["/id"], history="1d")
    rnd = random.Random(7)
    model: dict[int, dict[int, Any]] = {}  # publish seq -> topic state right after it
    state: dict[int, Any] = {}
    for _ in range(60):
        clock.advance(1)
        key = rnd.randrange(6)
        if rnd.random() < 0.2 and key in state:
            t.sow_delete(f"/id = {key}")
            del state[key]  # later versions must not show it; earlier ones still do
        else:
            doc = {"id": key, "v": rnd.randrange(100)}
            seq = t.publish(doc).seq
            state[key] = doc
            model[seq] = dict(state)
    assert len(model) > 30
    for seq, expected in model.items():
        got = {r.doc["id"]: r.doc for r in t.sow(bookmark=seq)}
        assert got == expected, seq
    assert {r.doc["id"]: r.doc for r in t.sow()} == state


def test_state_store_through_real_topic(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        topic = store.create_topic("state", keys=["/key"])
        with StateStore(topic, key="query-1", every=2) as state:
            state["batch_id"] = 3
    with SowStore(tmp_path) as store:
        state = StateStore(store.topic("state"), key="query-1")
        assert state["batch_id"] == 3
        plain = store.create_topic("keys", durability="transient")
        with StateStore(plain, key="q2") as other:
            other["x"] = 1
        assert StateStore(plain, key="q2")["x"] == 1
