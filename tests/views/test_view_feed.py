"""A view fed by the underlying topic's write path stays exact across batches with repeated
keys, deletes, expirations and compaction, and its subscribers see every change; the rows
it reads agree with the documents' own reading."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from sowlib import SowStore
from sowlib.subscriptions import Message
from sowlib.views.definition import ViewSpec, compile_view
from sowlib.views.feed import RowReader
from tests.views.orders import OrderWrites
from tests.views.test_view_model import FILTER, PROJECTION, canonical, reference_rows


class BatchedViewVsRecompute(OrderWrites):
    """publish_many batches, deletes, expirations and compactions of a file-backed topic."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp()
        super().__init__(self.dir)
        self.view = self.store.create_view(
            "stats", "orders", projection=PROJECTION, grouping=["/g"], filter=FILTER
        )
        self.seen: dict[str, dict[str, Any]] = {}  # what a view subscriber was told
        self.view.subscribe(self._on_view, oof=True)

    def _on_view(self, msg: Message) -> None:
        assert msg.sow_key is not None
        if msg.command == "publish":
            self.seen[msg.sow_key] = msg.doc
        elif msg.command == "oof":
            assert msg.reason == "deleted"
            del self.seen[msg.sow_key]

    @rule()
    def compact(self) -> None:
        self.source.compact()

    @invariant()
    def agrees(self) -> None:
        got = [r.doc for r in self.view.sow()]
        expected = reference_rows([r.doc for r in self.source.sow(FILTER)])
        assert canonical(got) == canonical(expected)
        assert canonical(list(self.seen.values())) == canonical(got)

    def teardown(self) -> None:
        super().teardown()
        shutil.rmtree(self.dir, ignore_errors=True)


TestBatchedViewVsRecompute = BatchedViewVsRecompute.TestCase
TestBatchedViewVsRecompute.settings = settings(max_examples=40, stateful_step_count=30)


def test_a_batch_writes_each_changed_group_once() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        view = store.create_view(
            "totals", "orders", projection=["/c", "SUM(/q) AS /q"], grouping=["/c"]
        )
        got: list[Message] = []
        view.subscribe(got.append, oof=True)
        orders.publish_many([{"id": i % 5, "c": "ab"[i % 2], "q": i} for i in range(20)])
        assert sorted((m.command, m.doc["c"]) for m in got) == [("publish", "a"), ("publish", "b")]
        # the last versions: ids 0-4 are messages 15-19
        totals = sorted((r.doc["c"], r.doc["q"]) for r in view.sow())
        assert totals == [("a", 16 + 18), ("b", 15 + 17 + 19)]
        got.clear()
        orders.sow_delete("/c = 'b'")  # a record at a time; the group empties: its OOF
        assert [m.command for m in got] == ["publish", "publish", "oof"]
        assert got[-1].reason == "deleted"
        assert [r.doc["c"] for r in view.sow()] == ["a"]


def test_a_group_emptied_and_filled_in_one_batch_is_one_update() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        view = store.create_view(
            "totals", "orders", projection=["/c", "COUNT(*) AS /n"], grouping=["/c"]
        )
        orders.publish({"id": 1, "c": "a"})
        got: list[Message] = []
        view.subscribe(got.append, oof=True)
        # key 1 leaves group a, key 2 joins it: a's record is the same, never deleted
        orders.publish_many([{"id": 1, "c": "b"}, {"id": 2, "c": "a"}])
        assert [(m.command, m.doc["c"]) for m in got] == [("publish", "b")]
        assert sorted((r.doc["c"], r.doc["n"]) for r in view.sow()) == [("a", 1), ("b", 1)]


def test_the_view_follows_the_write_path_not_a_subscription() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        store.create_view("totals", "orders", projection=["COUNT(*) AS /n"])
        assert orders.stats()["subscriptions"] in (0, None)
        orders.publish({"id": 1})
        assert [r.doc for r in store.topic("totals").sow()] == [{"n": 1}]


scalars = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "5", "2.5", "b"]),
    st.booleans(),
)
leaves = st.one_of(scalars, st.lists(scalars, max_size=3))
docs = st.fixed_dictionaries(
    {},
    optional={
        "g": leaves,
        "a": leaves,
        "b": leaves,
        "n": st.one_of(leaves, st.fixed_dictionaries({}, optional={"x": leaves})),
        "arr": st.lists(st.fixed_dictionaries({}, optional={"x": leaves}), max_size=3),
    },
)


@settings(max_examples=300)
@given(doc=docs)
def test_rows_read_as_the_documents_do(doc: dict[str, Any]) -> None:
    """The reference: the view read off the whole document (what a subscription feeds)."""
    spec = ViewSpec.make(
        "v",
        "t",
        [
            "/g",
            "SUM(/a * /b) AS /s",
            "MAX(/n/x) AS /m",
            "COUNT(*) AS /c",
            "COUNT_DISTINCT(/arr/x) AS /d",
            "MIN(/arr[1]/x) AS /lo",
            "/n/x AS /nx",
        ],
        ["/g", "/n/x"],
        "/a IS NOT NULL OR /arr/x > 0",
    )
    view = compile_view(spec)
    reader = RowReader(view)
    got = reader.parts([path.getter(doc) for path in reader.paths])
    flt = compile_view(spec)  # the filter as a subscription applies it
    from sowlib.expr import compile_filter

    if compile_filter(flt.spec.filter or "1=1").matches(doc) is not True:
        assert got is None
        return
    assert got is not None
    want = (view.group_of(doc), view.values_of(doc), view.plains_of(doc))
    assert repr(got) == repr(want)
