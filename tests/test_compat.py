"""The AMPS-client facade: names, signatures, message shapes and acknowledgements."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

import sowlib.compat as AMPS
from sowlib.compat import Client, Command, Message, MessageStream, parse_options
from sowlib.errors import (
    ArgumentError,
    FilterError,
    QueryOptionError,
    SowError,
    UnknownTopicError,
    UnsupportedOperationError,
)
from sowlib.store import SowStore


@pytest.fixture
def client() -> Client:
    store = SowStore()
    store.create_topic("orders", keys=["/id"])
    store.create_topic("raw", message_type="binary", durability="transient")
    c = Client("test", store)
    c.connect("tcp://127.0.0.1:9007/amps/json")
    c.logon()
    return c


def as_stream(got: MessageStream | str) -> MessageStream:
    assert isinstance(got, MessageStream)
    return got


def listed(got: MessageStream | str) -> list[Message]:
    """The messages of a finished (query) stream."""
    out = [m for m in as_stream(got)]
    assert None not in out
    return [m for m in out if m is not None]


def drain(stream: MessageStream | str) -> list[Message]:
    """Everything queued on a live stream (it yields None once nothing is left)."""
    out = []
    for m in as_stream(stream).timeout(5):
        if m is None:
            break
        out.append(m)
    return out


def fill(client: Client) -> None:
    for i in range(1, 6):
        client.publish(
            "orders", json.dumps({"id": i, "qty": i * 10, "side": "B" if i % 2 else "S"})
        )


def test_publish_returns_increasing_sequence_numbers(client: Client) -> None:
    first = client.publish("orders", '{"id": 1, "qty": 5}')
    second = client.publish("orders", '{"id": 2, "qty": 6}', correlation_id="c-2")
    assert second > first > 0


def test_sow_yields_group_markers_around_records(client: Client) -> None:
    fill(client)
    msgs = listed(client.sow("orders", "/qty > 20", order_by="/qty DESC"))
    assert [m.get_command() for m in msgs] == [
        Message.Command.GroupBegin,
        Message.Command.SOW,
        Message.Command.SOW,
        Message.Command.SOW,
        Message.Command.GroupEnd,
    ]
    rows = [json.loads(m.get_data()) for m in msgs[1:-1]]
    assert [r["qty"] for r in rows] == [50, 40, 30]
    assert msgs[1].get_data_raw() == msgs[1].get_data().encode()
    assert msgs[1].get_topic() == "orders"
    assert msgs[1].get_sow_key()
    assert msgs[1].get_bookmark().isdigit()
    assert msgs[1].get_timestamp().endswith("Z")


def test_sow_handler_form_and_options(client: Client) -> None:
    fill(client)
    got: list[Message] = []
    query_id = client.sow(got.append, "orders", None, order_by="/id", top_n=2, options="skip_n=1")
    assert isinstance(query_id, str)
    ids = [json.loads(m.get_data())["id"] for m in got if m.get_command() == "sow"]
    assert ids == [2, 3]


def test_sow_select_option(client: Client) -> None:
    fill(client)
    msgs = listed(client.sow("orders", "/id = 1", options="select=[-/,+/qty]"))
    assert json.loads(msgs[1].get_data()) == {"qty": 10}


def test_topic_without_sow_is_pub_sub(client: Client) -> None:
    stream = client.subscribe("nope", "/x > 1")
    assert client.publish("nope", '{"x": 2}') > 0
    client.publish("nope", '{"x": 0}')
    assert [m.get_data() for m in drain(stream)] == ['{"x": 2}']
    with pytest.raises(AMPS.InvalidTopicException) as info:
        client.sow("nope")
    assert isinstance(info.value, UnknownTopicError)
    with pytest.raises(UnknownTopicError):
        client.sow_delete("nope", "1=1")


def test_publisher_supplied_key(client: Client) -> None:
    raw = Client("raw", client.store)
    raw.connect("tcp://127.0.0.1:9007/amps/binary")  # the topic's message type
    raw.publish("raw", "hello", sow_key="abc")
    (msg,) = [m for m in listed(raw.sow("raw")) if m.get_command() == "sow"]
    assert msg.get_sow_key() == "abc"
    assert msg.get_data() == "hello"


def test_delta_publish_merges(client: Client) -> None:
    client.publish("orders", '{"id": 9, "qty": 1, "note": "x"}')
    client.delta_publish("orders", '{"id": 9, "qty": 2}')
    (msg,) = [m for m in listed(client.sow("orders", "/id = 9")) if m.get_command() == "sow"]
    assert json.loads(msg.get_data()) == {"id": 9, "qty": 2, "note": "x"}


def test_sow_delete_acks_carry_counts(client: Client) -> None:
    fill(client)
    ack = client.sow_delete("orders", "/side = 'B'")
    assert isinstance(ack, Message)
    assert ack.get_command() == Message.Command.Ack
    assert ack.get_ack_type() == Message.AckType.Stats
    assert ack.get_status() == "success"
    assert ack.get_matches() == 3
    assert ack.get_records_deleted() == 3
    keys = [m.get_sow_key() for m in listed(client.sow("orders")) if m.get_command() == "sow"]
    ack = client.sow_delete_by_keys("orders", ",".join(k for k in keys if k))
    assert isinstance(ack, Message)
    assert ack.get_records_deleted() == 2
    client.publish("orders", '{"id": 1, "qty": 1}')
    ack = client.sow_delete_by_data("orders", '{"id": 1}')
    assert isinstance(ack, Message)
    assert ack.get_records_deleted() == 1
    assert ack.get_matches() == 1


def test_sow_delete_handler_form(client: Client) -> None:
    fill(client)
    got: list[Message] = []
    client.sow_delete(got.append, "orders", "1=1")
    assert got[0].get_records_deleted() == 5


def test_sow_and_subscribe_handler_with_oof(client: Client) -> None:
    fill(client)
    got: list[Message] = []
    sub_id = client.sow_and_subscribe(got.append, "orders", "/qty >= 40", oof_enabled=True)
    assert isinstance(sub_id, str)
    assert [m.get_command() for m in got] == ["group_begin", "sow", "sow", "group_end"]
    client.publish("orders", '{"id": 4, "qty": 1}')
    assert got[-1].get_command() == Message.Command.OOF
    assert got[-1].get_reason() == "match"
    assert got[-1].get_sub_id() == sub_id
    client.sow_delete("orders", "/id = 5")
    assert (got[-1].get_command(), got[-1].get_reason()) == ("oof", "deleted")
    client.unsubscribe(sub_id)
    client.publish("orders", '{"id": 6, "qty": 99}')
    assert got[-1].get_reason() == "deleted"


def test_subscribe_stream_and_conflate(client: Client) -> None:
    stream = client.subscribe("orders", "/qty > 0")
    assert not isinstance(stream, str)
    stream.conflate()
    client.publish("orders", '{"id": 1, "qty": 1}')
    client.publish("orders", '{"id": 2, "qty": 1}')
    client.publish("orders", '{"id": 1, "qty": 2}')
    got = [json.loads(m.get_data()) for m in drain(stream)]
    assert got == [{"id": 1, "qty": 2}, {"id": 2, "qty": 1}]
    stream.close()
    client.publish("orders", '{"id": 3, "qty": 1}')
    assert list(stream) == []


def test_options_string_oof(client: Client) -> None:
    fill(client)
    stream = client.sow_and_subscribe("orders", "/qty > 40", options="oof")
    assert not isinstance(stream, str)
    client.publish("orders", '{"id": 5, "qty": 0}')
    cmds = [(m.get_command(), m.get_reason()) for m in drain(stream)]
    assert cmds[-1] == ("oof", "match")


def test_subscription_features_not_available_are_rejected(client: Client) -> None:
    with pytest.raises(UnsupportedOperationError):
        client.subscribe("orders", None, options="select=[+/a]")
    with pytest.raises(AMPS.InvalidTopicException):
        client.subscribe("orders", None, bookmark="0")  # no transaction log attached


def test_execute_commands(client: Client) -> None:
    ack = listed(client.execute(Command("publish").set_topic("orders").set_data('{"id": 1}')))
    assert ack[0].get_command() == "ack"
    assert ack[0].get_sequence() > 0
    cmd = Command("sow").set_topic("orders").set_filter("/id = 1").set_batch_size(5)
    assert [m.get_command() for m in listed(client.execute(cmd))] == [
        "group_begin",
        "sow",
        "group_end",
    ]
    got: list[Message] = []
    sub_id = client.execute_async(
        Command("subscribe").set_topic("orders").set_sub_id("s1"), got.append
    )
    assert sub_id == "s1"
    client.publish("orders", '{"id": 2}')
    assert got[-1].get_command() == "publish"
    client.execute(Command("unsubscribe").set_sub_id("s1"))
    (ack_msg,) = listed(client.execute(Command("sow_delete").set_topic("orders").set_filter("1=1")))
    assert ack_msg.get_records_deleted() == 2
    assert [m.get_ack_type() for m in listed(client.execute(Command("flush")))] == ["completed"]
    with pytest.raises(AMPS.UsageException) as info:
        client.execute(Command("start_timer"))
    assert isinstance(info.value, UnsupportedOperationError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (0, {}),
        (None, {}),
        ("oof", {"oof": True}),
        ("oof, no_empties,skip_n=5", {"oof": True, "no_empties": True, "skip_n": 5}),
        ("select=[-/,+/a,+/b],top_n=3", {"select": "[-/,+/a,+/b]", "top_n": 3}),
    ],
)
def test_parse_options(text: str | int | None, expected: dict[str, object]) -> None:
    assert parse_options(text) == expected


@pytest.mark.parametrize("text", ["bogus", "skip_n=x", "select=+/a", 5])
def test_parse_options_rejects(text: str | int) -> None:
    with pytest.raises(QueryOptionError):
        parse_options(text)


# ---------------------------------------------------------------------- drop-in surface


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    AMPS.reset()
    yield
    AMPS.reset()


def test_regex_sow_delete_sums_counts(client: Client) -> None:
    client.store.create_topic("orders-eu", keys=["/id"])
    client.publish("orders", '{"id": 1}')
    client.publish("orders-eu", '{"id": 1}')
    client.publish("orders-eu", '{"id": 2}')
    ack = client.sow_delete("orders.*", "/id = 1")
    assert isinstance(ack, Message)
    assert ack.get_records_deleted() == 2
    assert [m.get_topic() for m in listed(client.sow("orders.*")) if m.get_sow_key()] == [
        "orders-eu"
    ]


def test_sow_and_subscribe_on_pub_sub_topic_gives_empty_group_then_live(client: Client) -> None:
    got: list[Message] = []
    client.sow_and_subscribe(got.append, "news")
    client.publish("news", '{"h": 1}')
    assert [m.get_command() for m in got] == ["group_begin", "group_end", "publish"]


def test_translated_error_keeps_fields_and_both_identities(client: Client) -> None:
    with pytest.raises(FilterError) as info:
        client.sow("orders", "/a = ")
    err = info.value
    assert isinstance(err, AMPS.BadFilterException)
    assert isinstance(err, SowError)
    assert isinstance(err, ValueError)
    assert "/a = " in str(err)
    assert "BadFilterException" in repr(err)
    plain = AMPS.InvalidTopicException("just text")
    assert str(plain) == "just text"
    assert repr(plain) == "InvalidTopicException('just text')"


def test_attach_per_uri_catch_all_and_shared_default(fresh_registry: None) -> None:
    one, other = SowStore(), SowStore()
    AMPS.attach(one, "tcp://a:1/amps/json")
    a, b, c = Client("a"), Client("b"), Client("c")
    a.connect("tcp://a:1/amps/xml")
    b.connect("tcp://b:1/amps/json")
    c.connect("tcp://b:1/amps/json")
    assert a.store is one
    assert b.store is c.store is not one
    AMPS.attach(other)
    d = Client("d")
    d.connect("tcp://z:9/amps/json")
    assert d.store is other
    AMPS.detach()
    AMPS.detach("tcp://a:1/amps")
    e = Client("e")
    e.connect("tcp://a:1/amps/json")
    assert e.store is not one


def test_uri_message_type_picks_the_topic_type(fresh_registry: None) -> None:
    store = SowStore()
    store.create_topic("t", keys=["/id"], message_type="json")
    store.create_topic("t", keys=["/r/id"], message_type="xml")
    AMPS.attach(store)
    xml = Client("x")
    xml.connect("tcp://h:1/amps/xml")
    xml.publish("t", "<r><id>1</id></r>")
    assert len(store.topic("t", "xml")) == 1
    assert len(store.topic("t", "json")) == 0


def test_exception_listener_hears_handler_errors(client: Client) -> None:
    heard: list[BaseException] = []
    client.set_exception_listener(heard.append)

    def broken(message: Message) -> None:
        raise RuntimeError("handler bug")

    client.subscribe(broken, "orders")
    client.publish("orders", '{"id": 1}')  # the publisher is not broken
    assert [str(e) for e in heard] == ["handler bug"]


def test_command_acks_and_ids() -> None:
    command = Command("sow").set_ack_type("processed,stats").add_ack_type("completed")
    assert command.get_ack_type() == "processed,stats,completed"
    assert command.set_command_id("c1").get_command_id() == "c1"
    assert command.set_sequence(5).get_sequence() == 5
    with pytest.raises(ArgumentError):
        command.add_ack_type("bogus")
    assert command.reset("publish").get_ack_type() == ""


def test_message_aliases_and_constants() -> None:
    m = Message("oof", "t", data=b"x", reason="expired", sub_id="s", bookmark="1|2|")
    assert m.getData() == m.get_data() == "x"  # type: ignore[attr-defined]
    assert m.getBookmark() == "1|2|"  # type: ignore[attr-defined]
    assert m.get_reason() == Message.Reason.Expired
    assert Message.Options.TopN(3) == "top_n=3"
    assert Message.Options.Select("-/,+/a") == "select=[-/,+/a]"
    assert parse_options(",".join([Message.Options.OOF, Message.Options.SkipN(2)])) == {
        "oof": True,
        "skip_n": 2,
    }


def test_settings_recorded_or_refused(client: Client) -> None:
    client.set_heartbeat(5)
    client.set_auto_ack(True)
    assert client.get_auto_ack()
    assert client.get_unpersisted_count() == 0
    assert Client.convert_version_to_number("5.3.1.0") == 5030100
    assert client.get_name_hash().isdigit()
    client.set_transport_filter(print)  # accepted: no raw frames in process
    with pytest.raises(AMPS.UsageException):
        client.start_timer()


def test_max_depth_makes_another_thread_wait(client: Client) -> None:
    stream = as_stream(client.subscribe("orders")).max_depth(1).timeout(2000)
    first = None
    client.publish("orders", '{"id": 0}')
    first = next(stream)  # this thread is now the reader
    assert first is not None
    done = threading.Event()

    def publish_two() -> None:
        client.publish("orders", '{"id": 1}')
        client.publish("orders", '{"id": 2}')  # waits until the reader takes id 1
        done.set()

    worker = threading.Thread(target=publish_two)
    worker.start()
    assert not done.wait(0.2)
    assert stream.get_depth() == 1
    second = next(stream)
    worker.join(5)
    assert done.is_set()
    third = next(stream)
    assert second is not None
    assert third is not None
    assert [json.loads(m.get_data())["id"] for m in (first, second, third)] == [0, 1, 2]


def test_pub_sub_handler_errors_do_not_break_the_publisher(client: Client) -> None:
    heard: list[BaseException] = []
    client.set_exception_listener(heard.append)

    def broken(message: Message) -> None:
        raise RuntimeError("pub/sub handler bug")

    client.subscribe(broken, "news")
    client.publish("news", '{"h": 1}')
    assert [str(e) for e in heard] == ["pub/sub handler bug"]
