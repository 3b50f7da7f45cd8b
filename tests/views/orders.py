"""The underlying writes the views' state machines share: an ``orders`` topic (``/id``
keys, an hour's expiration) written by ``publish_many`` batches, single publishes,
deletes of key ranges and expirations (:class:`OrderWrites`); the rows they publish
(:data:`row`, :func:`order_doc`)."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from sowlib import SowStore
from tests.conftest import FakeClock
from tests.views.test_view_model import values

__all__ = ["OrderWrites", "order_doc", "row"]

#: ``(id, group, value, skip)``: ``order_doc``'s arguments.
row = st.tuples(
    st.integers(0, 15),  # key: repeats within a batch
    st.sampled_from(["a", "b", "c", None]),
    values,
    st.booleans(),
)


def order_doc(key: int, group: str | None, value: Any, skip: bool) -> dict[str, Any]:
    """An order: ``/g`` left out for None, ``/v`` for ``"missing"``, ``/skip`` when set."""
    doc: dict[str, Any] = {"id": key}
    if group is not None:
        doc["g"] = group
    if value != "missing":
        doc["v"] = value
    if skip:
        doc["skip"] = 1
    return doc


class OrderWrites(RuleBasedStateMachine):
    """The ``orders`` topic of a store on a fake clock (in ``directory``, else in memory)
    and the rules that write it; a subclass adds its views, rules and invariants."""

    #: The rows the rules publish.
    ROW: ClassVar[st.SearchStrategy[tuple[int, str | None, Any, bool]]] = row

    def __init__(self, directory: str | None = None) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.store = SowStore(directory, clock=self.clock)
        self.source = self.store.create_topic("orders", keys=["/id"], expiration="1h")

    @rule(data=st.data(), ttl=st.one_of(st.none(), st.integers(1, 30)))
    def publish_many(self, data: st.DataObject, ttl: int | None) -> None:
        rows = data.draw(st.lists(self.ROW, max_size=12), label="rows")
        self.source.publish_many([order_doc(*r) for r in rows], expiration=ttl)

    @rule(data=st.data())
    def publish(self, data: st.DataObject) -> None:
        self.source.publish(order_doc(*data.draw(self.ROW, label="row")))

    @rule(low=st.integers(0, 15), width=st.integers(0, 6))
    def delete(self, low: int, width: int) -> None:
        self.source.sow_delete(f"/id BETWEEN {low} AND {low + width}")

    @rule(seconds=st.integers(1, 20))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.store.process_expirations()

    def teardown(self) -> None:
        self.store.close()
