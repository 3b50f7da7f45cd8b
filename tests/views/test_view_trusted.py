"""The trusted write of a view's changed groups (``Topic.write_derived``) agrees with its
reference, one publish or delete per group: the same records, counters and subscriber
messages (OOF, filtered and delta subscriptions included), in the same order; and the view
equals the aggregate recomputed from the underlying topic."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from sowlib import SowStore
from sowlib.errors import ReadOnlyError
from sowlib.subscriptions import Message, Subscription
from sowlib.views.definition import ViewSpec, compile_view
from sowlib.views.feed import ViewFeed
from tests.conftest import FakeClock
from tests.views.orders import OrderWrites
from tests.views.test_view_model import FILTER, PROJECTION, canonical, reference_rows, values

odd = st.sampled_from([math.nan, math.inf, -math.inf, 2**63 + 5, -(2**64), True, "x"])
row = st.tuples(
    st.integers(0, 15),  # key: repeats within a batch
    st.sampled_from(["a", "b", "c", None]),
    st.one_of(values, odd),
    st.booleans(),
)
SPEC = ViewSpec.make("v", "orders", PROJECTION, ["/g"], FILTER)


def _odd(doc: dict[str, Any]) -> bool:
    v = doc.get("v")
    if isinstance(v, float):
        return not math.isfinite(v)
    return v is True or v is False or v == "x" or (isinstance(v, int) and abs(v) > 10**6)


def _message(msg: Message) -> tuple[Any, ...]:
    doc = msg.doc
    text = repr(sorted(doc.items())) if isinstance(doc, dict) else repr(doc)
    return (msg.command, msg.sow_key, msg.data, msg.seq, msg.timestamp, msg.reason, text)


class TrustedVsReference(OrderWrites):
    """One underlying topic, two views of it: one written by the trusted write, one by
    the reference; each watched (or not) by the same subscriptions."""

    #: The view topics' indexes (with one: every trusted write takes the batch path).
    INDEXES: tuple[str, ...] = ("/records",)
    #: Whether the subscriptions include filtered ones (without: the messages of the
    #: changed groups go out in one pass, SubscriptionManager.on_publishes).
    FILTERED = True

    ROW = row

    def __init__(self) -> None:
        super().__init__()
        self.targets = [
            self.store.create_topic(name, durability="transient", indexes=list(self.INDEXES))
            for name in ("trusted", "reference")
        ]
        self.feeds = [
            ViewFeed(compile_view(SPEC), target, trusted=trusted)
            for target, trusted in zip(self.targets, (True, False), strict=True)
        ]
        for feed in self.feeds:
            feed.start(self.source)
        self.seen: list[list[tuple[Any, ...]]] = [[], []]
        self.subs: list[Subscription] = []
        self.watch()

    @precondition(lambda self: not self.subs)
    @rule(delta=st.booleans())
    def watch(self, delta: bool = True) -> None:
        for seen, target in zip(self.seen, self.targets, strict=True):

            def record(msg: Message, seen: list[tuple[Any, ...]] = seen) -> None:
                seen.append(_message(msg))

            self.subs += [
                target.subscribe(record, oof=True),
                target.subscribe(record, "/records > 1", oof=True)
                if self.FILTERED
                else target.subscribe(record),
            ]
            if delta and self.FILTERED:  # the only subscription reading the replaced record
                self.subs.append(target.subscribe(record, delta=True))

    @precondition(lambda self: bool(self.subs))
    @rule()
    def unwatch(self) -> None:
        for sub in self.subs:
            sub.unsubscribe()
        self.subs = []

    @rule(step=st.integers(0, 5))
    def tick(self, step: int) -> None:
        self.clock.advance(step / 1000)  # messages carry the write's time

    @invariant()
    def agrees(self) -> None:
        trusted, reference = ([(r.sow_key, r.data, r.seq) for r in t.sow()] for t in self.targets)
        assert trusted == reference
        assert self.seen[0] == self.seen[1]
        stats = [t.stats() for t in self.targets]
        for counter in ("inserts", "updates", "deletes", "publishes"):
            assert stats[0][counter] == stats[1][counter]
        assert [f.errors for f in self.feeds] == [0, 0]
        assert len(self.targets[0].sow("/records > 1")) == len(self.targets[1].sow("/records > 1"))
        got = [r.doc for r in self.targets[0].sow()]
        docs = [r.doc for r in self.source.sow(FILTER)]
        if not any(map(_odd, docs)):  # the recomputation of test_view_model's values
            assert canonical(got) == canonical(reference_rows(docs))


TestTrustedVsReference = TrustedVsReference.TestCase
TestTrustedVsReference.settings = settings(max_examples=25, stateful_step_count=25)


class PlainTrustedVsReference(TrustedVsReference):
    """The same, with view topics without indexes watched by unfiltered subscriptions: a
    single put's few groups written one by one, every message delivered in one pass."""

    INDEXES = ()
    FILTERED = False


TestPlainTrustedVsReference = PlainTrustedVsReference.TestCase
TestPlainTrustedVsReference.settings = settings(max_examples=25, stateful_step_count=25)


def _view_topic(store: SowStore) -> Any:
    orders = store.create_topic("orders", keys=["/id"])
    view = store.create_view(
        "totals", "orders", projection=["/g", "SUM(/v) AS /s"], grouping=["/g"]
    )
    return orders, view


def test_a_watched_view_writes_a_batch_in_one_step_with_every_message() -> None:
    with SowStore(clock=FakeClock()) as store:
        orders, view = _view_topic(store)
        got: list[Message] = []
        view.subscribe(got.append, oof=True)
        orders.publish_many([{"id": i, "g": f"g{i % 3}", "v": i} for i in range(9)])
        assert [(m.command, m.doc) for m in got] == [
            ("publish", {"g": "g0", "s": 9}),
            ("publish", {"g": "g1", "s": 12}),
            ("publish", {"g": "g2", "s": 15}),
        ]
        assert [m.seq for m in got] == [1, 2, 3]
        orders.sow_delete("/g = 'g1'")  # record by record: two updates, then the OOF
        after = [(m.command, m.reason, m.doc["s"]) for m in got[3:]]
        assert [a[:2] for a in after] == [("publish", None), ("publish", None), ("oof", "deleted")]
        assert after[1][2] == after[2][2] in (1, 4, 7)  # what was left before the last went
        stats = view.stats()
        assert (stats["inserts"], stats["updates"], stats["deletes"]) == (3, 2, 1)


def test_a_topic_that_cannot_take_it_writes_nothing() -> None:
    with SowStore() as store:
        keyed = store.create_topic("keyed", keys=["/g"])
        assert keyed.write_derived([("1", {"g": 1})]) is False
        xml = store.create_topic("x", message_type="xml", durability="transient")
        assert xml.write_derived([("1", {"g": "1"})]) is False
        plain = store.create_topic("plain", durability="transient")
        # a document the codec refuses: False, not even the puts before it written
        assert plain.write_derived([("1", {"g": 1}), ("2", {"g": object()})]) is False
        assert len(keyed) == len(xml) == len(plain) == 0
        assert plain.write_derived([("1", {"g": 1}), ("2", None), ("1", None)]) is True
        assert len(plain) == 0
        assert plain.stats()["deletes"] == 1


def test_integers_beyond_64_bits_are_written_as_published() -> None:
    with SowStore() as store:
        orders, view = _view_topic(store)
        got: list[Message] = []
        view.subscribe(got.append)
        orders.publish_many([{"id": 1, "g": "a", "v": 2**70}, {"id": 2, "g": "b", "v": 1}])
        assert {m.sow_key for m in got} == {r.sow_key for r in view.sow()}
        assert sorted(r.doc["s"] for r in view.sow()) == [1, 2**70]
        assert [m.doc["s"] for m in got] == [2**70, 1]


def test_a_reader_cannot_write_derived(tmp_path: Any) -> None:
    with SowStore(str(tmp_path)) as store:
        store.create_topic("t", keys=["/id"])
    with SowStore(str(tmp_path), readonly=True) as reader, pytest.raises(ReadOnlyError):
        reader.topic("t").write_derived([("1", {"a": 1})])


@pytest.mark.parametrize("count", [1, 3, 40])
@pytest.mark.parametrize("durability", ["transient", "persistent"])
def test_write_derived_stores_what_publishing_each_stores(
    tmp_path: Any, durability: str, count: int
) -> None:
    changes: list[tuple[str, Any]] = [(f"k{i % 7}", {"n": i, "s": f"v{i}"}) for i in range(count)]
    changes += [("k1", None), ("k9", None), ("k2", {"n": -1})]
    with SowStore(str(tmp_path), clock=FakeClock()) as store:
        fast, ref = (
            store.create_topic(name, durability=durability, indexes=["/n"])
            for name in ("fast", "ref")
        )
        seen: list[list[tuple[Any, ...]]] = [[], []]
        for topic, out in zip((fast, ref), seen, strict=True):

            def keep(m: Message, out: list[tuple[Any, ...]] = out) -> None:
                out.append(_message(m))

            topic.subscribe(keep, oof=True)
            topic.subscribe(keep, delta=True)
        assert fast.write_derived(changes) is True
        for sow_key, doc in changes:
            if doc is None:
                ref.sow_delete_by_keys(sow_key)
            else:
                ref.publish(doc, sow_key=sow_key)
        assert seen[0] == seen[1]
        for topic in (fast, ref):
            topic.flush()
        rows = [[(r.sow_key, r.data, r.seq) for r in t.sow("/n >= 0")] for t in (fast, ref)]
        assert rows[0] == rows[1]
        assert [t.stats()["publishes"] for t in (fast, ref)] == [count + 1] * 2
    if durability == "persistent":  # what was written reads back the same after a reopen
        with SowStore(str(tmp_path)) as store:
            again = [[(r.sow_key, r.data) for r in store.topic(n).sow()] for n in ("fast", "ref")]
            assert again[0] == again[1]
