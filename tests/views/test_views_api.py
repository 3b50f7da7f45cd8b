"""Views, conflated topics and aggregated queries through the store, the configuration and
the AMPS facade: the sample configuration, queries on a view, errors, the timer thread."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.compat import Client, Command, MessageStream, UsageException
from sowlib.errors import (
    ConfigError,
    QueryOptionError,
    ReadOnlyError,
    TopicExistsError,
    UnknownTopicError,
)
from sowlib.subscriptions import Message
from tests.conftest import FakeClock

SAMPLE = Path(__file__).parent / "sample_config.xml"


def sow_docs(got: Any) -> list[Any]:
    """The documents of the ``sow`` messages of a finished facade query stream."""
    assert isinstance(got, MessageStream)
    return [json.loads(m.get_data()) for m in got if m is not None and m.get_command() == "sow"]


ORDERS = [
    {"orderId": 1, "customer": "ann", "quantity": 2, "price": 10.0},
    {"orderId": 2, "customer": "bob", "quantity": 1, "price": 4.5},
    {"orderId": 3, "customer": "ann", "quantity": 3, "price": 1.0},
]


def test_sample_configuration_view_loads_and_answers_sow(tmp_path: Path) -> None:
    with SowStore.from_config(SAMPLE, base_dir=tmp_path) as store:
        assert store.derived_topics() == {
            "customer-order-totals": "view",
            "orders-conflated": "conflated",
        }
        store.topic("orders").publish_many(ORDERS)
        view = store.topic("customer-order-totals")
        got = {r.doc["customer"]: r.doc["total"] for r in view.sow()}
        assert got == {"ann": 23.0, "bob": 4.5}
        assert [r.doc for r in view.sow("/total > 5")] == [{"customer": "ann", "total": 23.0}]
        top = view.sow(order_by="/total DESC", top_n=1)
        assert [r.doc["customer"] for r in top] == ["ann"]


def test_a_reopened_store_rebuilds_its_views_from_the_underlying_topic(tmp_path: Path) -> None:
    with SowStore.from_config(SAMPLE, base_dir=tmp_path) as store:
        store.topic("orders").publish_many(ORDERS)
    with SowStore.from_config(SAMPLE, base_dir=tmp_path) as store:
        totals = {r.doc["customer"]: r.doc["total"] for r in store["customer-order-totals"].sow()}
        assert totals == {"ann": 23.0, "bob": 4.5}
        assert len(store.topic("orders-conflated")) == 3  # copied when it opens


def test_the_facade_queries_a_view_by_name(tmp_path: Path) -> None:
    with SowStore.from_config(SAMPLE, base_dir=tmp_path) as store:
        store.topic("orders").publish_many(ORDERS)
        client = Client("views", store)
        client.connect("tcp://127.0.0.1:9007/amps/json")
        client.logon()
        totals = {d["customer"] for d in sow_docs(client.sow("customer-order-totals"))}
        assert totals == {"ann", "bob"}


def test_facade_aggregated_sow_with_projection_and_grouping_options() -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/orderId"]).publish_many(ORDERS)
    client = Client("agg", store)
    client.connect("tcp://127.0.0.1:9007/amps/json")
    client.logon()
    options = (
        "projection=[/customer,SUM(/quantity * /price) AS /total,COUNT(*) AS /n],"
        "grouping=[/customer]"
    )
    stream = client.execute(
        Command("sow").set_topic("orders").set_options(options).set_order_by("/total DESC")
    )
    assert sow_docs(stream) == [
        {"customer": "ann", "total": 23.0, "n": 2},
        {"customer": "bob", "total": 4.5, "n": 1},
    ]
    filtered = client.sow("orders", "/customer = 'bob'", options=options)
    assert sow_docs(filtered) == [{"customer": "bob", "total": 4.5, "n": 1}]
    with pytest.raises(QueryOptionError):
        client.sow("orders", options="grouping=[/customer]")
    with pytest.raises(QueryOptionError):
        client.sow("orders", options="projection=[NOPE(/x) AS /y]")


def test_store_aggregated_query_and_subscription() -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/orderId"])
    orders.publish_many(ORDERS)
    rows = store.sow_aggregate(
        "orders", "/price > 2", projection=["/customer", "COUNT(*) AS /n"], grouping="/customer"
    )
    assert sorted((r.doc["customer"], r.doc["n"]) for r in rows) == [("ann", 1), ("bob", 1)]
    got: list[Message] = []
    sub = store.sow_and_subscribe_aggregate(
        got.append,
        "orders",
        projection=["/customer", "MAX(/price) AS /top"],
        grouping=["/customer"],
    )
    assert [m.command for m in got] == ["group_begin", "sow", "sow", "group_end"]
    got.clear()
    orders.publish({"orderId": 4, "customer": "bob", "quantity": 1, "price": 99})
    assert [(m.command, m.doc) for m in got] == [("publish", {"customer": "bob", "top": 99})]
    got.clear()
    orders.sow_delete("/customer = 'bob'")
    assert [m.command for m in got][-1] == "oof"
    sub.unsubscribe()
    orders.publish({"orderId": 5, "customer": "cy", "quantity": 1, "price": 1})
    assert [m.command for m in got][-1] == "oof"
    assert not sub.active


def test_a_view_is_subscribable_with_oof() -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/orderId"])
    view = store.create_view(
        "big", "orders", projection=["/customer", "SUM(/quantity) AS /q"], grouping=["/customer"]
    )
    got: list[Message] = []
    view.sow_and_subscribe(got.append, "/q > 2", oof=True)
    orders.publish(ORDERS[0])
    orders.publish(ORDERS[2])  # ann: 2 + 3 > 2
    orders.sow_delete("/orderId = 3")  # ann: 2, out of the filter's focus
    assert [(m.command, m.reason) for m in got[2:]] == [("publish", None), ("oof", "match")]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"projection": []}, ConfigError),
        ({"projection": ["SUM(/a) + AS /x"]}, ConfigError),
        ({"projection": ["SUM(/a)"]}, ConfigError),  # an expression needs AS
        ({"projection": ["SUM(SUM(/a)) AS /x"]}, ConfigError),
        ({"projection": ["SUM(*) AS /x"]}, ConfigError),
        ({"projection": ["/a", "MAX(/b) AS /a"]}, ConfigError),  # one target twice
        ({"projection": ["/a"], "grouping": ["/a[0]"]}, ConfigError),
        ({"projection": ["/a"], "filter": "/a >"}, ConfigError),
        ({"projection": ["/a"], "underlying": "nope"}, UnknownTopicError),
    ],
)
def test_bad_view_definitions_are_refused_and_create_nothing(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/orderId"])
    underlying = kwargs.pop("underlying", "orders")
    with pytest.raises(error):
        store.create_view("v", underlying, **kwargs)
    assert "v" not in store
    assert store.derived_topics() == {}


def test_view_names_and_readers() -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/orderId"])
    view = store.create_view("v", "orders", projection=["COUNT(*) AS /n"])
    again = store.create_view("v", "orders", projection=["COUNT(*) AS /n"])
    assert again is view
    with pytest.raises(TopicExistsError):
        store.create_view("v", "orders", projection=["COUNT(*) AS /m"])
    with pytest.raises(TopicExistsError):
        store.create_view("orders", "orders", projection=["COUNT(*) AS /m"])
    with pytest.raises(ConfigError):
        store.create_conflated_topic("c", "orders", interval="0s")


def test_readonly_store_cannot_create_views(tmp_path: Path) -> None:
    with SowStore(tmp_path) as writer:
        writer.create_topic("orders", keys=["/orderId"])
        with SowStore(tmp_path, readonly=True) as reader, pytest.raises(ReadOnlyError):
            reader.create_view("v", "orders", projection=["COUNT(*) AS /n"])


def test_binary_underlying_topic_is_refused() -> None:
    store = SowStore()
    store.create_topic("raw", message_type="binary", durability="transient")
    with pytest.raises(ConfigError):
        store.create_view("v", "raw", projection=["COUNT(*) AS /n"])


@pytest.mark.parametrize(
    "body",
    [
        "<View><Name>v</Name><MessageType>json</MessageType></View>",
        "<View><Name>v</Name><UnderlyingTopic>t</UnderlyingTopic><MessageType>json</MessageType></View>",
        "<View><Name>v</Name><UnderlyingTopic>t</UnderlyingTopic><MessageType>json</MessageType>"
        "<Projection/></View>",
        "<View><Name>v</Name><UnderlyingTopic>t</UnderlyingTopic><MessageType>json</MessageType>"
        "<Projection><Field>/a</Field></Projection><Bogus/></View>",
        "<View><Name>v</Name><UnderlyingTopic><Join>[t].[/a] = [u].[/b]</Join></UnderlyingTopic>"
        "<MessageType>json</MessageType><Projection><Field>/a</Field></Projection></View>",
        "<View><Name>v</Name><UnderlyingTopic><Join>t = u</Join></UnderlyingTopic>"
        "<MessageType>json</MessageType><Projection><Field>/a</Field></Projection></View>",
        "<View><Name>v</Name><UnderlyingTopic>nope</UnderlyingTopic><MessageType>json</MessageType>"
        "<Projection><Field>/a</Field></Projection></View>",
        "<ConflatedTopic><Name>c</Name><UnderlyingTopic>t</UnderlyingTopic>"
        "<MessageType>json</MessageType></ConflatedTopic>",
        "<ConflatedTopic><Name>c</Name><UnderlyingTopic>t</UnderlyingTopic>"
        "<MessageType>json</MessageType><Interval>soon</Interval></ConflatedTopic>",
        "<ConflatedTopic><Name>c</Name><UnderlyingTopic>t</UnderlyingTopic>"
        "<MessageType>xml</MessageType><Interval>1s</Interval></ConflatedTopic>",
    ],
)
def test_bad_derived_elements_are_config_errors(body: str) -> None:
    xml = (
        "<SOW><Topic><Name>t</Name><MessageType>json</MessageType><Key>/a</Key>"
        f"<Durability>transient</Durability></Topic>{body}</SOW>"
    )
    with pytest.raises((ConfigError, UnknownTopicError)):
        SowStore.from_config(xml)


def test_conflation_runs_on_the_timer_thread_and_stops_on_close() -> None:
    store = SowStore()
    ticks = store.create_topic("ticks", keys=["/sym"])
    conflated = store.create_conflated_topic("ticks-fast", "ticks", interval=0.2)
    got: list[int] = []
    latest = threading.Event()

    def on_message(message: Message) -> None:
        got.append(json.loads(message.data)["px"])
        if got[-1] == 49:
            latest.set()

    conflated.subscribe(on_message)
    start = time.monotonic()
    for px in range(50):
        ticks.publish({"sym": "A", "px": px})
    assert latest.wait(5)
    elapsed = time.monotonic() - start
    assert got[-1] == 49  # the latest reached the subscriber...
    assert len(got) <= elapsed / 0.2 + 1  # ...in at most one message per interval
    threads = [t for t in threading.enumerate() if t.name == "sowlib-conflation"]
    assert threads
    store.close()
    assert all(not t.is_alive() for t in threads)


def test_tick_drives_conflation_with_an_injected_clock() -> None:
    clock = FakeClock()
    store = SowStore(clock=clock)
    ticks = store.create_topic("ticks", keys=["/sym"])
    conflated = store.create_conflated_topic("c", "ticks", interval="10s")
    ticks.publish({"sym": "A", "px": 1})
    assert store.tick() == 0
    assert len(conflated) == 0
    clock.advance(10)
    # the store's timer thread may run the due interval first: either way it ran once
    assert store.tick() in (0, 1)
    assert len(conflated) == 1
    assert store.tick() == 0
    store.close()


def test_store_sow_takes_projection_and_grouping() -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/orderId"]).publish_many(ORDERS)
    rows = store.sow(
        "ord.*", projection=["/customer", "SUM(/quantity) AS /q"], grouping=["/customer"]
    )
    assert sorted((r.doc["customer"], r.doc["q"]) for r in rows) == [("ann", 5), ("bob", 1)]
    assert all(json.loads(r.data) == r.doc for r in rows)
    with pytest.raises(QueryOptionError):
        store.sow("orders", grouping=["/customer"])


def test_facade_aggregated_sow_and_subscribe() -> None:
    store = SowStore()
    orders = store.create_topic("orders", keys=["/orderId"])
    orders.publish_many(ORDERS)
    client = Client("agg-sub", store)
    client.connect("tcp://127.0.0.1:9007/amps/json")
    client.logon()
    got: list[Any] = []
    options = "projection=[/customer,COUNT(*) AS /n],grouping=[/customer]"
    client.sow_and_subscribe(got.append, "orders", options=options)
    initial = [json.loads(m.get_data()) for m in got if m.get_command() == "sow"]
    assert sorted(d["customer"] for d in initial) == ["ann", "bob"]
    got.clear()
    orders.publish({"orderId": 9, "customer": "bob", "quantity": 1, "price": 1})
    assert [json.loads(m.get_data()) for m in got] == [{"customer": "bob", "n": 2}]
    with pytest.raises(UsageException):
        client.subscribe(got.append, "orders", options=options)


def test_a_join_view_from_the_configuration_builds_from_existing_records() -> None:
    xml = """<SOW>
      <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key>
        <Durability>transient</Durability></Topic>
      <Topic><Name>companies</Name><MessageType>json</MessageType><Key>/ticker</Key>
        <Durability>transient</Durability></Topic>
      <View><Name>by-company</Name><MessageType>json</MessageType>
        <UnderlyingTopic><Join>[json].[orders].[/sym] = [json].[companies].[/ticker]</Join>
        </UnderlyingTopic>
        <Projection><Field>[companies].[/name]</Field>
          <Field>SUM([orders].[/qty]) AS /qty</Field></Projection>
        <Grouping><Field>[companies].[/name]</Field></Grouping>
      </View></SOW>"""
    with SowStore.from_config(xml) as store:
        store.topic("companies").publish({"ticker": "A", "name": "Acme"})
        store.topic("orders").publish_many([{"id": i, "sym": "A", "qty": i} for i in range(4)])
        assert [r.doc for r in store.topic("by-company").sow()] == [{"name": "Acme", "qty": 6}]
    store = SowStore()
    store.create_topic("orders", keys=["/id"]).publish({"id": 1, "sym": "A", "qty": 2})
    store.create_topic("companies", keys=["/ticker"]).publish({"ticker": "A", "name": "Acme"})
    view = store.create_view(
        "v",
        join="[orders].[/sym] = [companies].[/ticker]",
        projection=["[companies].[/name]", "SUM([orders].[/qty]) AS /qty"],
        grouping=["[companies].[/name]"],
    )
    assert [r.doc for r in view.sow()] == [{"name": "Acme", "qty": 2}]


@pytest.mark.parametrize(
    "join",
    ["[orders].[/sym] == [companies].[/t]", "[orders].[/a] = [orders].[/b]", "orders = companies"],
)
def test_bad_joins_are_config_errors(join: str) -> None:
    store = SowStore()
    store.create_topic("orders", keys=["/id"])
    store.create_topic("companies", keys=["/ticker"])
    with pytest.raises(ConfigError):
        store.create_view("v", join=join, projection=["COUNT(*) AS /n"])
    with pytest.raises(UnknownTopicError):
        store.create_view("v", join="[orders].[/a] = [nope].[/b]", projection=["COUNT(*) AS /n"])
    assert "v" not in store
