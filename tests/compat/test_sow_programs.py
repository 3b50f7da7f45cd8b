"""Publish and query programs written the way the AMPS client documentation writes them
(untyped, as such programs are).

Each test body is an AMPS client program; only its import line differs
(``import sowlib.compat as AMPS`` instead of ``import AMPS``).
"""

from __future__ import annotations

import json

import sowlib.compat as AMPS  # was: import AMPS


def test_publish_loop_then_sow_with_group_markers(uri):
    client = AMPS.Client("publisher")
    client.connect(uri)
    client.logon()
    for i in range(1, 11):
        client.publish("orders", json.dumps({"id": i, "sym": "MSFT", "qty": i * 100}))

    seen, groups = [], []
    for message in client.sow("orders", "/qty >= 500"):
        command = message.get_command()
        if command == AMPS.Message.Command.GroupBegin:
            groups.append("begin")
        elif command == AMPS.Message.Command.SOW:
            seen.append(json.loads(message.get_data())["id"])
        elif command == AMPS.Message.Command.GroupEnd:
            groups.append("end")
    assert groups == ["begin", "end"]
    assert sorted(seen) == [5, 6, 7, 8, 9, 10]
    client.close()


def test_sow_with_a_handler(uri):
    client = AMPS.Client("handler")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1, "qty": 5}')
    got = []

    def on_message(message: AMPS.Message) -> None:
        got.append((message.get_command(), message.get_sow_key() is not None))

    query_id = client.sow(on_message, "orders", batch_size=100)
    assert isinstance(query_id, str)
    assert got == [("group_begin", False), ("sow", True), ("group_end", False)]


def test_command_built_query_with_order_and_top_n(uri):
    client = AMPS.Client("query")
    client.connect(uri)
    client.logon()
    for i, qty in enumerate([30, 10, 50, 20, 40], start=1):
        client.publish("orders", json.dumps({"id": i, "qty": qty}))
    command = (
        AMPS.Command("sow")
        .set_topic("orders")
        .set_filter("/qty > 10")
        .set_order_by("/qty DESC")
        .set_top_n(3)
        .set_batch_size(10)
    )
    rows = [
        json.loads(m.get_data())["qty"]
        for m in client.execute(command)
        if m.get_command() == AMPS.Message.Command.SOW
    ]
    assert rows == [50, 40, 30]


def test_sow_keys_restrict_a_query(uri):
    client = AMPS.Client("keys")
    client.connect(uri)
    client.logon()
    for i in range(1, 6):
        client.publish("orders", json.dumps({"id": i}))
    keys = {
        json.loads(m.get_data())["id"]: m.get_sow_key()
        for m in client.sow("orders")
        if m.get_command() == "sow"
    }
    wanted = f"{keys[2]},{keys[4]}"
    command = AMPS.Command("sow").set_topic("orders").set_sow_keys(wanted)
    ids = sorted(
        json.loads(m.get_data())["id"] for m in client.execute(command) if m.get_command() == "sow"
    )
    assert ids == [2, 4]
    both = AMPS.Command("sow").set_topic("orders").set_sow_keys(wanted).set_filter("/id > 3")
    assert [m.get_sow_key() for m in client.execute(both) if m.get_command() == "sow"] == [keys[4]]


def test_completed_and_stats_acks_on_request(uri):
    client = AMPS.Client("acks")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1}')
    command = AMPS.Command("sow").set_topic("orders").set_command_id("q-1")
    command.add_ack_type("stats").add_ack_type("completed")
    messages = list(client.execute(command))
    assert [m.get_command() for m in messages][-2:] == ["ack", "ack"]
    stats, completed = messages[-2:]
    assert stats.get_ack_type() == AMPS.Message.AckType.Stats
    assert stats.get_records_returned() == 1
    assert completed.get_ack_type() == AMPS.Message.AckType.Completed
    assert {m.get_command_id() for m in messages} == {"q-1"}


def test_regex_topic_query_and_compound_keys(uri):
    client = AMPS.Client("regex")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1, "qty": 1}')
    client.publish("orders-eu", '{"id": 1, "qty": 2}')
    client.publish("positions", '{"book": "B1", "sym": "IBM", "qty": 3}')
    client.publish("positions", '{"book": "B1", "sym": "IBM", "qty": 4}')
    topics = sorted(m.get_topic() for m in client.sow("orders.*") if m.get_command() == "sow")
    assert topics == ["orders", "orders-eu"]
    (position,) = [m for m in client.sow("positions") if m.get_command() == "sow"]
    assert json.loads(position.getData())["qty"] == 4  # camelCase alias


def test_delta_publish_merges_fields(uri):
    client = AMPS.Client("delta")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 88, "client": "Rosa", "qty": 40, "stage": "new"}')
    client.delta_publish("orders", '{"id": 88, "stock": "ok"}')
    client.delta_publish("orders", '{"id": 88, "limit": "approved"}')
    (message,) = [m for m in client.sow("orders", "/id = 88") if m.get_command() == "sow"]
    assert json.loads(message.get_data()) == {
        "id": 88,
        "client": "Rosa",
        "qty": 40,
        "stage": "new",
        "stock": "ok",
        "limit": "approved",
    }


def test_sow_delete_acks_and_counts(uri):
    client = AMPS.Client("deleter")
    client.connect(uri)
    client.logon()
    for i in range(1, 7):
        client.publish("orders", json.dumps({"id": i, "side": "buy" if i % 2 else "sell"}))
    ack = client.sow_delete("orders", "/side = 'buy'")
    assert ack.get_ack_type() == "stats"
    assert (ack.get_matches(), ack.get_records_deleted(), ack.get_sow_deleted()) == (3, 3, 3)

    key = next(m.get_sow_key() for m in client.sow("orders", "/id = 2") if m.get_command() == "sow")
    assert client.sow_delete_by_keys("orders", key).get_records_deleted() == 1
    assert client.sow_delete_by_data("orders", '{"id": 4}').get_records_deleted() == 1
    assert client.sow_delete_by_data("orders", '{"id": 4}').get_records_deleted() == 0

    acks = []
    client.execute_async(AMPS.Command("sow_delete").set_topic("orders"), acks.append)
    assert [a.get_records_deleted() for a in acks] == [1]


def test_sow_delete_command_with_sow_keys(uri):
    client = AMPS.Client("deleter2")
    client.connect(uri)
    client.logon()
    for i in range(1, 5):
        client.publish("orders", json.dumps({"id": i}))
    keys = [m.get_sow_key() for m in client.sow("orders", "/id <= 2") if m.get_command() == "sow"]
    command = AMPS.Command("sow_delete").set_topic("orders").set_sow_keys(",".join(keys))
    (ack,) = client.execute(command)
    assert ack.get_records_deleted() == 2
    assert sorted(
        json.loads(m.get_data())["id"] for m in client.sow("orders") if m.get_command() == "sow"
    ) == [3, 4]


def test_ha_client_with_a_server_chooser(uri):
    client = AMPS.HAClient("ha-publisher")
    chooser = AMPS.DefaultServerChooser()
    chooser.add(uri)
    chooser.add("tcp://backup:9007/amps/json")
    client.set_server_chooser(chooser)
    client.connect_and_logon()
    client.publish("orders", '{"id": 1, "qty": 2}')
    assert [m.get_command() for m in client.sow("orders")] == ["group_begin", "sow", "group_end"]
    client.disconnect()
    try:
        AMPS.HAClient("no-servers").connect_and_logon()
    except AMPS.DisconnectedException:
        refused = True
    assert refused


def test_command_publish_with_sow_key_expiration_and_processed_ack(uri, instance):
    instance.create_topic("blobs", message_type="binary")
    client = AMPS.Client("blob-writer")
    client.connect(uri.replace("/amps/json", "/amps/binary"))  # the topic's message type
    client.logon()
    command = (
        AMPS.Command("publish")
        .set_topic("blobs")
        .set_sow_key("YWJj")
        .set_data(b"\x00\x01raw")
        .set_correlation_id("req-7")
    )
    (ack,) = client.execute(command)
    assert ack.get_ack_type() == AMPS.Message.AckType.Processed
    assert ack.get_sequence() > 0
    (message,) = [m for m in client.sow("blobs") if m.get_command() == "sow"]
    assert message.get_sow_key() == "YWJj"
    assert message.get_data_raw() == b"\x00\x01raw"
    assert message.get_correlation_id() == "req-7"
    assert message.get_timestamp().endswith("Z")


def test_sow_and_subscribe_with_order_and_top_n(uri):
    client = AMPS.Client("top")
    client.connect(uri)
    client.logon()
    for i, qty in enumerate([5, 50, 20, 40], start=1):
        client.publish("orders", json.dumps({"id": i, "qty": qty}))
    got = []
    client.sow_and_subscribe(got.append, "orders", order_by="/qty DESC", top_n=2)
    client.publish("orders", '{"id": 9, "qty": 1}')
    assert [(m.get_command(), json.loads(m.get_data())["qty"]) for m in got if m.get_sow_key()] == [
        ("sow", 50),
        ("sow", 40),
        ("publish", 1),
    ]
