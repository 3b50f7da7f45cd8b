"""Programs that use the client's older and lower-level names: ``allocate_message``/``send``
(the shape of the official OOF sample), the camelCase methods, the deprecated exception
names, authenticators, publish stores and the transport filter.

Only the import line differs from a program written for the real client.
"""

from __future__ import annotations

import json

import pytest

import sowlib.compat as AMPS  # was: import AMPS


def test_update_for_oof_sample_shape_with_allocate_message_and_send(uri, clock):
    watcher = AMPS.Client("oof-watcher")
    watcher.connect(uri)
    watcher.logon()
    events = []

    def on_message(message):
        if message.get_command() == AMPS.Message.Command.OOF:
            events.append(("oof", json.loads(message.get_data())["id"], message.get_reason()))
        elif message.get_command() in ("sow", "publish"):
            events.append((message.get_command(), json.loads(message.get_data())["id"]))

    watcher.sow_and_subscribe(on_message, "orders", "/note IS NOT NULL", oof_enabled=True)

    def deleted_message_ack(message):
        events.append(("ack", message.get_records_deleted()))

    client = AMPS.Client("updater")
    client.connect(uri)
    client.logon()
    m = client.allocate_message()
    m.set_expiration("1")
    m.set_command("publish")
    m.set_topic("orders")
    m.set_data('{"id": 50000, "note": "here and then gone"}')
    client.send(m)
    client.publish("orders", '{"id": 500, "note": "to be deleted"}')
    for number in range(0, 5000, 1250):
        client.publish("orders", json.dumps({"id": number, "note": "hello"}))
    for number in range(0, 5000, 1250):
        client.publish("orders", json.dumps({"id": number}))  # the field is gone: out of focus
    client.sow_delete(deleted_message_ack, "orders", "/id = 500", 0)
    clock.now += 2
    client.store.process_expirations()
    client.close()

    assert events[:2] == [("publish", 50000), ("publish", 500)]
    oofs = [e for e in events if e[0] == "oof"]
    assert oofs == [
        *[("oof", n, "match") for n in range(0, 5000, 1250)],
        ("oof", 500, "deleted"),
        ("oof", 50000, "expired"),
    ]
    assert ("ack", 1) in events


def test_send_refuses_what_it_cannot_run(uri):
    client = AMPS.Client("sender")
    client.connect(uri)
    message = client.allocate_message().set_command("sow").set_topic("orders")
    with pytest.raises(AMPS.UsageException, match="execute_async"):
        client.send(message)
    bad = client.allocateMessage().setCommand("publish").setTopic("orders")
    bad.set_data('{"id": 1}').set_expiration("soon")
    with pytest.raises(AMPS.UsageException, match="seconds"):
        client.send(bad)
    assert client.sow_delete("orders").get_records_deleted() == 0  # nothing was published


def test_camel_case_program(uri):
    errors = []
    client = AMPS.Client("placeholder")
    client.setName("legacy-app")
    client.setExceptionListener(errors.append)
    client.connect(uri)
    client.logon()
    assert client.getName() == "legacy-app"
    got = []
    client.sowAndSubscribe(lambda m: got.append(m.getCommand()), "orders", "/qty > 0")
    client.publish("orders", '{"id": 1, "qty": 5}')
    client.deltaPublish("orders", '{"id": 1, "qty": 6}')
    ack = client.sowDelete("orders", "/id = 1")
    assert ack.getRecordsDeleted() == 1
    message = client.allocateMessage()
    message.setCommand("publish").setTopic("orders").setData('{"id": 2, "qty": 1}')
    client.send(message)
    assert got == ["group_begin", "group_end", "publish", "publish", "publish"]
    assert client.getExceptionListener() is not None
    assert errors == []
    client.unsubscribe()
    client.disconnect()


def test_deprecated_exception_names_catch_the_same_errors(uri):
    client = AMPS.Client("old-names")
    client.connect(uri)
    client.logon()
    caught = None
    try:
        client.sow("orders", "/qty >>> 3")
    except AMPS.BadFilter as e:
        caught = e
    assert isinstance(caught, AMPS.BadFilterException)
    with pytest.raises(AMPS.BadRegexTopic):
        client.subscribe("orders(", None)
    with pytest.raises(AMPS.AlreadyConnected):
        client.connect(uri)
    assert AMPS.AuthenticationError is AMPS.AuthenticationException


def test_logon_with_an_authenticator():
    calls = []

    class Recording(AMPS.DefaultAuthenticator):
        def authenticate(self, username, password):
            calls.append(("authenticate", username, password))
            return super().authenticate(username, password)

        def completed(self, username, password, reason):
            calls.append(("completed", username, reason))

    client = AMPS.Client("secure")
    client.connect("tcp://alice:s3cret@127.0.0.1:9107/amps/json")
    client.logon(5000, Recording())
    assert calls == [("authenticate", "alice", "s3cret"), ("completed", "alice", "success")]
    client.publish("anything", '{"ok": true}')
    client.close()
    AMPS.reset()


def test_publish_store_counts_and_holds_nothing(uri):
    client = AMPS.Client("durable-publisher")
    store = AMPS.MemoryPublishStore()
    client.set_publish_store(store)
    client.connect(uri)
    client.logon()
    for i in range(3):
        client.publish("orders", json.dumps({"id": i}))
    client.delta_publish("orders", '{"id": 0, "qty": 1}')
    client.execute(AMPS.Command("publish").set_topic("orders").set_data('{"id": 9}'))
    client.publish_flush()
    assert client.get_publish_store() is store
    assert store.stored == 5
    assert store.get_unpersisted_count() == 0
    assert client.get_unpersisted_count() == 0
    assert store.replay(lambda m: None) == 0
    with pytest.raises(AMPS.UsageException, match="not a store"):
        client.set_publish_store(object())


def test_file_publish_store_takes_a_path(uri, tmp_path):
    client = AMPS.HAClient("ha-publisher")
    client.set_publish_store(AMPS.PublishStore(str(tmp_path / "publish.store")))
    chooser = AMPS.DefaultServerChooser()
    chooser.add(uri)
    client.set_server_chooser(chooser)
    client.connect_and_logon()
    client.publish("orders", '{"id": 1}')
    assert client.get_publish_store().stored == 1


def test_transport_filter_is_accepted_and_changes_nothing(uri):
    client = AMPS.Client("filtered")
    frames = []
    client.set_transport_filter(lambda data, incoming: frames.append(data))
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1}')
    assert [m.get_command() for m in client.sow("orders")] == ["group_begin", "sow", "group_end"]
    assert frames == []  # no raw frames in process


def test_send_a_subscription_with_a_routed_handler(uri):
    client = AMPS.Client("raw-subscriber")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1, "qty": 5}')
    got = []
    client.add_message_handler("orders-sub", lambda m: got.append(m.get_command()), "", True)
    subscribe = client.allocate_message()
    subscribe.set_command("sow_and_subscribe").set_topic("orders").set_filter("/qty > 1")
    subscribe.set_command_id("orders-sub")
    client.send(subscribe)
    client.publish("orders", '{"id": 2, "qty": 9}')
    client.publish("orders", '{"id": 3, "qty": 0}')
    assert got == ["group_begin", "sow", "group_end", "publish"]
    unsubscribe = client.allocate_message().set_command("unsubscribe").set_sub_id("orders-sub")
    client.send(unsubscribe)
    assert client.remove_message_handler("orders-sub")
    client.publish("orders", '{"id": 4, "qty": 9}')
    assert got[-1] == "publish"
    assert len(got) == 4
    assert not client.remove_message_handler("orders-sub")
