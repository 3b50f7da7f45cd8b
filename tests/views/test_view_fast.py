"""The fast paths of a watched view agree with their references: a group's message rendered
field by field, the document a subscriber's record carries without decoding its payload,
and a single publish taken in at once (the state machine of ``test_view_trusted`` runs
the references side by side with these)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import get_codec
from sowlib.document import MISSING
from sowlib.subscriptions import Message
from sowlib.topic.derivedwrite import own_doc
from sowlib.views.aggregates import Avg, StddevPop, StddevSamp, Sum
from sowlib.views.definition import ViewSpec, compile_view

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
FLAT = ["/g", "SUM(/v) AS /s", "COUNT(*) AS /n", "MAX(/v) AS /top", "/w AS /copy"]


@given(results=st.lists(st.one_of(scalars, st.just(MISSING)), min_size=3, max_size=3))
def test_a_flat_view_renders_as_field_by_field(results: list[Any]) -> None:
    view = compile_view(ViewSpec.make("v", "t", FLAT, ["/g"]))
    plains = (results[0], results[2])
    assert view.render(results, plains) == view.render_fields(results, plains)
    nested = compile_view(ViewSpec.make("v", "t", [*FLAT, "/v AS /a/b"], ["/g"]))
    assert nested.render(results, (*plains, results[1])) == nested.render_fields(
        results, (*plains, results[1])
    )


@given(doc=st.dictionaries(st.text(max_size=3), st.one_of(scalars, st.lists(st.integers()))))
def test_a_document_is_its_own_decoding_only_when_it_reads_back_the_same(
    doc: dict[str, Any],
) -> None:
    codec = get_codec("json")
    try:
        payload = codec.encode(doc)
    except Exception:
        return  # the write refuses it before own_doc is asked
    own = own_doc(doc)
    if own is MISSING:
        return
    assert own is not doc  # a copy: the subscriber's, not the view's
    decoded = codec.decode(payload)
    assert decoded == own
    assert [type(v) for v in decoded.values()] == [type(v) for v in own.values()]


def test_non_finite_large_and_nested_values_are_decoded_from_the_payload() -> None:
    for value in (math.nan, math.inf, 2**64, -(2**63) - 1, {"a": 1}, [1]):
        assert own_doc({"x": value}) is MISSING
    assert own_doc({"x": 2**64 - 1, "y": -(2**63), "z": -0.0, "t": "é"}) is not MISSING


def test_a_subscriber_changing_its_message_changes_nothing_else() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        view = store.create_view("v", "orders", projection=["/g", "SUM(/q) AS /s"], grouping=["/g"])
        got: list[Message] = []

        def meddle(msg: Message) -> None:
            got.append(msg)
            msg.doc["s"] = -1  # the subscriber's own copy

        view.subscribe(meddle)
        orders.publish({"id": 1, "g": "a", "q": 2})
        orders.publish({"id": 2, "g": "a", "q": 0})  # the total stays 2: no message
        orders.publish({"id": 3, "g": "a", "q": 3})
        assert [orjson.loads(m.data) for m in got] == [{"g": "a", "s": 2}, {"g": "a", "s": 5}]
        assert [r.doc for r in view.sow()] == [{"g": "a", "s": 5}]


def test_a_single_publish_into_a_watched_view_is_delivered_before_it_returns() -> None:
    with SowStore() as store:
        orders = store.create_topic("orders", keys=["/id"])
        view = store.create_view("v", "orders", projection=["/g", "SUM(/q) AS /s"], grouping=["/g"])
        got: list[Any] = []
        view.subscribe(lambda m: got.append((m.command, m.doc)), oof=True)
        orders.publish({"id": 1, "g": "a", "q": 2})
        assert got == [("publish", {"g": "a", "s": 2})]
        orders.publish({"id": 1, "g": "b", "q": 2})  # moves: the old group leaves
        assert got[1:] == [("oof", {"g": "a", "s": 2}), ("publish", {"g": "b", "s": 2})]
        orders.publish({"id": 1, "g": "b", "q": math.inf})
        # an infinity is published as null: the sum is NULL, left out of the message
        assert got[3] == ("publish", {"g": "b"})
        assert view.stats()["publishes"] == 3


numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1]),
)


@given(
    added=st.lists(numbers, min_size=1, max_size=12),
    removed=st.lists(st.integers(0, 11), max_size=8),
)
def test_sums_means_and_deviations_are_exact_whatever_the_scale(
    added: list[Any], removed: list[int]
) -> None:
    """The scale of the exact sums follows the finest float counted; whatever was added
    and removed, the results are the correctly rounded ones of the values left in."""
    states = [Sum(), Avg(), StddevPop(), StddevSamp()]
    left = list(added)
    for v in added:
        for state in states:
            state.add(v)
    for at in removed:
        if len(left) > 1 and at < len(left):
            v = left.pop(at)
            for state in states:
                state.remove(v)
    exact = sum((Fraction(v) for v in left), Fraction(0))
    floats = any(type(v) is float for v in left)
    want_sum = _rounded(exact) if floats else int(exact)
    assert states[0].value() == want_sum
    assert type(states[0].value()) is type(want_sum)
    assert states[1].value() == _rounded(exact / len(left))
    mean = exact / len(left)
    square = sum(((Fraction(v) - mean) ** 2 for v in left), Fraction(0))
    assert states[2].value() == math.sqrt(_rounded(square / len(left)))
    samp = None if len(left) == 1 else math.sqrt(_rounded(square / (len(left) - 1)))
    assert states[3].value() == samp


def _rounded(q: Fraction) -> float:
    """``q`` correctly rounded to a float, infinity past the range (as the states give)."""
    try:
        return q.numerator / q.denominator
    except OverflowError:
        return math.inf if q > 0 else -math.inf
