"""SubscriptionManager with fake records and filters, then through a real Topic."""

from __future__ import annotations

import json
import logging
from typing import Any

import attrs
import pytest

from sowlib.document import MISSING
from sowlib.errors import (
    ArgumentError,
    RegexTimeoutError,
    UnsupportedFilterError,
)
from sowlib.subscriptions import Message, SubscriptionManager, changed_fields


@attrs.frozen
class FakeRecord:
    sow_key: str
    doc: Any
    seq: int = 1
    timestamp: float = 0.0
    expiration: float | None = None
    correlation_id: bytes = b""

    @property
    def data(self) -> bytes:
        return json.dumps(self.doc, sort_keys=True).encode()


@attrs.frozen
class FakeFilter:
    """Matches when /price > limit."""

    limit: int
    deterministic: bool = True

    def matches(self, doc: Any, ctx: Any = None) -> bool:
        return bool(doc.get("price", 0) > self.limit)


def rec(key: str, seq: int = 1, **doc: Any) -> FakeRecord:
    return FakeRecord(key, {"id": key, **doc}, seq=seq)


def encode(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True).encode()


@pytest.fixture
def manager() -> SubscriptionManager:
    return SubscriptionManager("orders", "json", encode, keys=["/id"])


def commands(msgs: list[Message]) -> list[tuple[str, str | None, str | None]]:
    return [(m.command, m.sow_key, m.reason) for m in msgs]


def test_inactive_until_first_subscription(manager: SubscriptionManager) -> None:
    assert not manager.active
    sub = manager.add(lambda m: None, None)
    assert manager.active
    sub.unsubscribe()
    sub.unsubscribe()  # idempotent
    assert not manager.active
    assert not sub.active


def test_publish_delivered_only_when_filter_matches(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    manager.add(got.append, FakeFilter(10))
    manager.on_change("publish", "a", None, rec("a", price=5))
    manager.on_change("publish", "b", None, rec("b", seq=2, price=50))
    assert commands(got) == [("publish", "b", None)]
    assert got[0].seq == 2
    assert json.loads(got[0].data) == {"id": "b", "price": 50}
    assert got[0].topic == "orders"


def test_initial_records_are_framed_by_group_markers(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    manager.add(got.append, None, initial=[rec("a", price=1), rec("b", price=2)])
    assert commands(got) == [
        ("group_begin", None, None),
        ("sow", "a", None),
        ("sow", "b", None),
        ("group_end", None, None),
    ]


def test_oof_match_carries_new_record(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    sub = manager.add(got.append, FakeFilter(10), oof=True, initial=[rec("a", price=20)])
    assert sub.in_focus("a")
    new = rec("a", seq=2, price=3)
    manager.on_change("publish", "a", rec("a", price=20), new)
    assert commands(got)[-1] == ("oof", "a", "match")
    assert got[-1].data == new.data
    assert not sub.in_focus("a")
    # coming back is an ordinary publish
    manager.on_change("publish", "a", new, rec("a", seq=3, price=30))
    assert commands(got)[-1] == ("publish", "a", None)


@pytest.mark.parametrize(("kind", "reason"), [("delete", "deleted"), ("expire", "expired")])
def test_oof_on_removal_of_received_record(
    manager: SubscriptionManager, kind: str, reason: str
) -> None:
    got: list[Message] = []
    old = rec("a", price=20)
    manager.add(got.append, FakeFilter(10), oof=True, initial=[old])
    manager.on_change(kind, "a", old, None)
    assert commands(got)[-1] == ("oof", "a", reason)
    assert got[-1].data == old.data


def test_no_oof_for_records_never_received(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    manager.add(got.append, FakeFilter(10), oof=True)
    manager.on_change("delete", "x", rec("x", price=50), None)
    manager.on_change("publish", "y", rec("y", price=1), rec("y", price=2))
    assert got == []


def test_no_oof_without_option(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    old = rec("a", price=20)
    manager.add(got.append, FakeFilter(10), initial=[old])
    manager.on_change("publish", "a", old, rec("a", price=1))
    manager.on_change("delete", "a", rec("a", price=1), None)
    assert [m.command for m in got] == ["group_begin", "sow", "group_end"]


def test_oof_filter_must_be_deterministic(manager: SubscriptionManager) -> None:
    with pytest.raises(UnsupportedFilterError) as info:
        manager.add(lambda m: None, FakeFilter(1, deterministic=False), oof=True)
    assert info.value.backend == "oof subscription"
    assert not manager.active
    # without OOF the same filter is accepted
    manager.add(lambda m: None, FakeFilter(1, deterministic=False))


def test_delta_subscription_gets_keys_and_changed_fields(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    first = rec("a", price=20, qty=5, meta={"x": 1, "y": 2})
    manager.add(got.append, None, delta=True, initial=[first])
    second = rec("a", seq=2, price=20, qty=6, meta={"x": 1, "y": 3})
    manager.on_change("publish", "a", first, second)
    last = got[-1]
    assert last.is_delta
    assert json.loads(last.data) == {"id": "a", "qty": 6, "meta": {"y": 3}}


def test_delta_first_change_of_an_existing_record_is_a_delta(
    manager: SubscriptionManager,
) -> None:
    # AMPS computes the delta against the stored record, even one older than the subscription
    got: list[Message] = []
    manager.add(got.append, None, delta=True)
    manager.on_change("publish", "a", rec("a", price=1), rec("a", price=2, qty=1))
    assert got[-1].is_delta
    assert json.loads(got[-1].data) == {"id": "a", "price": 2, "qty": 1}
    manager.on_change("publish", "b", None, rec("b", price=1))  # an insert is whole
    assert not got[-1].is_delta


def test_delta_of_a_record_entering_the_filter_is_full(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    manager.add(got.append, FakeFilter(10), delta=True)
    manager.on_change("publish", "a", rec("a", price=5, qty=1), rec("a", price=30, qty=1))
    assert not got[-1].is_delta
    assert json.loads(got[-1].data) == {"id": "a", "price": 30, "qty": 1}


def test_delta_record_back_in_focus_is_full(manager: SubscriptionManager) -> None:
    got: list[Message] = []
    a1 = rec("a", price=20, qty=1)
    manager.add(got.append, FakeFilter(10), delta=True, oof=True, initial=[a1])
    a2 = rec("a", price=5, qty=1)
    manager.on_change("publish", "a", a1, a2)
    a3 = rec("a", price=30, qty=1)
    manager.on_change("publish", "a", a2, a3)
    assert commands(got)[-2:] == [("oof", "a", "match"), ("publish", "a", None)]
    assert not got[-1].is_delta
    assert json.loads(got[-1].data) == {"id": "a", "price": 30, "qty": 1}


@pytest.mark.parametrize(("no_empties", "expected"), [(True, 3), (False, 4)])
def test_no_empties_suppresses_unchanged_updates(
    manager: SubscriptionManager, no_empties: bool, expected: int
) -> None:
    got: list[Message] = []
    a1 = rec("a", price=20)
    manager.add(got.append, None, delta=True, no_empties=no_empties, initial=[a1])
    manager.on_change("publish", "a", a1, rec("a", seq=2, price=20))
    assert len(got) == expected
    if not no_empties:
        assert json.loads(got[-1].data) == {"id": "a"}


def test_raising_callback_is_counted_and_others_still_served(
    manager: SubscriptionManager, caplog: pytest.LogCaptureFixture
) -> None:
    seen_errors: list[tuple[BaseException, Message]] = []

    def boom(message: Message) -> None:
        raise RuntimeError("subscriber bug")

    bad = manager.add(boom, None, on_error=lambda e, m: seen_errors.append((e, m)))
    got: list[Message] = []
    manager.add(got.append, None)
    with caplog.at_level(logging.ERROR, logger="sowlib.subscriptions"):
        manager.on_change("publish", "a", None, rec("a", price=1))
    assert bad.errors == 1
    assert len(got) == 1
    assert isinstance(seen_errors[0][0], RuntimeError)
    assert seen_errors[0][1].sow_key == "a"
    assert any(r.name == "sowlib.subscriptions" for r in caplog.records)


def test_raising_on_error_handler_is_contained(manager: SubscriptionManager) -> None:
    def boom(*args: object) -> None:
        raise ValueError("bad")

    sub = manager.add(boom, None, on_error=boom)
    manager.on_change("publish", "a", None, rec("a"))
    assert sub.errors == 1


def test_unsubscribe_inside_callback_stops_further_delivery(
    manager: SubscriptionManager,
) -> None:
    got: list[Message] = []

    def once(message: Message) -> None:
        got.append(message)
        sub.unsubscribe()

    sub = manager.add(once, None)
    manager.on_change("publish", "a", None, rec("a"))
    manager.on_change("publish", "b", None, rec("b"))
    assert len(got) == 1


def test_context_manager_unsubscribes(manager: SubscriptionManager) -> None:
    with manager.add(lambda m: None, None) as sub:
        assert manager.get(sub.id) is sub
    assert manager.get(sub.id) is None
    assert not manager.active


def test_unknown_change_kind_rejected(manager: SubscriptionManager) -> None:
    with pytest.raises(ArgumentError):
        manager.on_change("update", "a", None, rec("a"))
    with pytest.raises(ArgumentError):
        manager.on_change("publish", "a", None, None)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": 1}, {"a": 1.0}, {"a": 1.0}),
        ({"a": 1}, {"a": True}, {"a": True}),
        ({"a": [1, 2]}, {"a": [1, 3]}, {"a": [1, 3]}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 2, "d": 3}}, {"a": {"d": 3}}),
        ({"a": 1, "gone": 2}, {"a": 1}, None),
        ({"a": 1}, {"a": {"x": 1}}, {"a": {"x": 1}}),
    ],
)
def test_changed_fields(old: Any, new: Any, expected: Any) -> None:
    got = changed_fields(old, new)
    if expected is None:
        assert got is MISSING
    else:
        assert got == expected


# -- issue 16: a subscriber's filter never fails a publish ---------------------------


@attrs.frozen
class RaisingFilter:
    """A filter whose evaluation raises ``exc`` (a LIKE time limit, a bug...)."""

    exc: Exception
    deterministic: bool = True

    def matches(self, doc: Any, ctx: Any = None) -> bool:
        raise self.exc


@pytest.mark.parametrize(
    "exc", [RegexTimeoutError("(a+)+$", 1.0), RuntimeError("filter bug"), RecursionError()]
)
def test_issue16_filter_error_goes_to_the_subscription_not_the_publisher(
    manager: SubscriptionManager, exc: Exception
) -> None:
    seen: list[tuple[BaseException, Message]] = []
    bad = manager.add(
        lambda m: None, RaisingFilter(exc), oof=True, on_error=lambda e, m: seen.append((e, m))
    )
    got: list[Message] = []
    good = manager.add(got.append, None)
    manager.on_change("publish", "a", None, rec("a", price=1))  # must not raise
    assert bad.errors == bad.filter_errors == 1
    assert bad.error is exc
    assert bad.delivered == 0
    assert not bad.in_focus("a")
    assert seen[0][0] is exc
    assert (seen[0][1].command, seen[0][1].sow_key) == ("publish", "a")
    assert len(got) == 1
    assert good.error is None


def test_issue16_filter_error_without_handler_is_recorded(manager: SubscriptionManager) -> None:
    sub = manager.add(lambda m: None, RaisingFilter(ValueError("x")))
    manager.on_change("publish", "a", None, rec("a"))
    manager.on_change("publish", "b", None, rec("b"))
    assert sub.filter_errors == 2
    assert isinstance(sub.error, ValueError)


def test_issue16_long_and_filter_works_for_every_publish(any_store: Any) -> None:
    # 198 clauses once broke every publish from the 1,000th (generated code nested too deep)
    topic = any_store.create_topic("long", keys=["/id"])
    text = " AND ".join(f"/f{i} IS NULL" for i in range(197)) + " AND /id >= 0"
    got: list[Message] = []
    sub = topic.subscribe(got.append, text)
    for i in range(1100):
        topic.publish(json.dumps({"id": i}).encode())
    assert len(got) == 1100
    assert sub.errors == 0


def test_issue16_like_time_limit_in_a_subscription_does_not_fail_publish(
    any_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sowlib.expr import clear_cache, like

    monkeypatch.setattr(like, "REGEX_TIMEOUT", 0.01)
    clear_cache()
    topic = any_store.create_topic("slow", keys=["/id"])
    errors: list[BaseException] = []
    sub = topic.subscribe(
        lambda m: None, "/s LIKE '^(a|aa)+$'", on_error=lambda e, m: errors.append(e)
    )
    topic.publish(json.dumps({"id": 1, "s": "a" * 40 + "b"}).encode())  # must not raise
    assert len(topic.sow("/id = 1")) == 1  # stored, and publish returned normally
    assert sub.filter_errors == 1
    assert isinstance(errors[0], RegexTimeoutError)
    clear_cache()
