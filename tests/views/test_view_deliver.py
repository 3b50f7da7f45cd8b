"""A derived topic's messages delivered in one pass (``SubscriptionManager.on_publishes``)
against one ``on_change`` per change: the same messages, in the same order, to the same
subscriptions, with the same focus kept, whatever the callbacks do meanwhile."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.record import Record
from sowlib.subscriptions import Message, SubscriptionManager


def _record(key: str, seq: int, doc: dict[str, Any]) -> Record:
    data = repr(sorted(doc.items())).encode()
    return Record(key, data, seq, 1.5, None, "v", "json", b"", doc)


def _seen(msg: Message) -> tuple[Any, ...]:
    return (msg.command, msg.sow_key, msg.data, msg.seq, msg.reason, msg.doc)


#: What a callback does besides noting the message: nothing, raise, unsubscribe the
#: next subscription, or publish into the same topic (a change delivered after this one).
ACTIONS = ("note", "raise", "drop-next", "publish")


def _managers(actions: list[str], oofs: list[bool]) -> tuple[list[Any], list[list[Any]]]:
    """Two managers with the same subscriptions; returns them and what each saw."""
    managers: list[Any] = []
    seen: list[list[Any]] = [[], []]
    for side in range(2):
        manager = SubscriptionManager("v", "json", lambda doc: b"{}")
        subs: list[Any] = []
        for i, (action, oof) in enumerate(zip(actions, oofs, strict=True)):

            def callback(
                msg: Message,
                i: int = i,
                action: str = action,
                side: int = side,
                subs: list[Any] = subs,
            ) -> None:
                seen[side].append((i, *_seen(msg)))
                if action == "raise":
                    raise ValueError("a subscriber's bug")
                if action == "drop-next" and i + 1 < len(subs):
                    subs[i + 1].unsubscribe()
                if action == "publish" and msg.sow_key != "again":
                    managers[side].on_change("publish", "again", None, _record("again", 99, {}))

            subs.append(manager.add(callback, None, oof=oof))
        managers.append((manager, subs))
    return managers, seen


@settings(max_examples=60)
@given(
    actions=st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=4),
    oofs=st.data(),
    keys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5),
)
def test_one_pass_delivers_what_one_change_at_a_time_does(
    actions: list[str], oofs: st.DataObject, keys: list[str]
) -> None:
    flags = oofs.draw(st.lists(st.booleans(), min_size=len(actions), max_size=len(actions)))
    managers, seen = _managers(actions, flags)
    changes = [(k, None, _record(k, n, {"k": k, "n": n})) for n, k in enumerate(keys)]
    (one_pass, subs_a), (each, subs_b) = managers
    one_pass.on_publishes(changes)
    for key, old, new in changes:
        each.on_change("publish", key, old, new)
    assert seen[0] == seen[1]
    for a, b in zip(subs_a, subs_b, strict=True):
        assert (a.delivered, a.errors, a.active) == (b.delivered, b.errors, b.active)
        assert [a.in_focus(k) for k in "abc"] == [b.in_focus(k) for k in "abc"]


def test_filtered_and_delta_subscriptions_take_one_change_at_a_time() -> None:
    manager = SubscriptionManager("v", "json", lambda doc: b"{}")
    got: list[tuple[Any, ...]] = []
    manager.add(lambda m: got.append(("all", *_seen(m))), None)
    flt: Any = type("F", (), {"deterministic": True, "matches": lambda s, d, c=None: d["n"] > 0})
    manager.add(lambda m: got.append(("flt", *_seen(m))), flt(), oof=True)
    old, new = _record("a", 1, {"n": 0}), _record("a", 2, {"n": 1})
    manager.on_publishes([("a", None, old), ("a", old, new)])
    assert [(who, seq) for who, _c, _k, _d, seq, _r, _doc in got] == [
        ("all", 1),
        ("all", 2),
        ("flt", 2),
    ]


def test_a_raising_journal_subscriber_stops_the_pass() -> None:
    manager = SubscriptionManager("v", "json", lambda doc: b"{}")

    def journal(msg: Message) -> None:
        raise OSError("disk full")

    sub = manager.add(journal, None)
    sub.raises = True
    with pytest.raises(OSError, match="disk full"):
        manager.on_publishes([("a", None, _record("a", 1, {}))])
    assert sub.errors == 1


def test_a_watched_view_sends_each_changed_group_in_order() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        view = store.create_view(
            "totals", "orders", projection=["/g", "SUM(/v) AS /s"], grouping=["/g"]
        )
        got: list[tuple[str, Any]] = []
        view.subscribe(lambda m: got.append((m.command, m.doc)), oof=True)
        orders.publish({"id": 1, "g": "x", "v": 2})
        orders.publish({"id": 1, "g": "y", "v": 3})  # x empties, y appears: two messages
        orders.publish_many([{"id": 2, "g": "y", "v": 4}, {"id": 3, "g": "z", "v": 1}])
        assert got == [
            ("publish", {"g": "x", "s": 2}),
            ("oof", {"g": "x", "s": 2}),
            ("publish", {"g": "y", "s": 3}),
            ("publish", {"g": "y", "s": 7}),
            ("publish", {"g": "z", "s": 1}),
        ]
