"""Subscription programs in the style of the AMPS client documentation.

Only the import line differs from a program written for the real client.
"""

from __future__ import annotations

import json
import threading

import sowlib.compat as AMPS  # was: import AMPS


def test_sow_and_subscribe_with_oof_match_deleted_expired(uri, clock):
    client = AMPS.Client("oof-watcher")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1, "qty": 100}')
    client.publish("orders", '{"id": 2, "qty": 200}')
    client.publish("orders", '{"id": 3, "qty": 300}', expiration=30)

    events = []

    def on_message(message: AMPS.Message) -> None:
        command = message.get_command()
        if command in (AMPS.Message.Command.SOW, AMPS.Message.Command.Publish):
            events.append((command, json.loads(message.get_data())["id"]))
        elif command == AMPS.Message.Command.OOF:
            events.append(("oof", message.get_reason()))

    sub_id = client.sow_and_subscribe(on_message, "orders", "/qty >= 100", oof_enabled=True)
    assert sorted(events) == [("sow", 1), ("sow", 2), ("sow", 3)]
    events.clear()
    client.publish("orders", '{"id": 1, "qty": 50}')  # leaves the filter
    client.sow_delete("orders", "/id = 2")
    clock.now += 31
    client.store.process_expirations()
    client.publish("orders", '{"id": 4, "qty": 400}')
    assert events == [("oof", "match"), ("oof", "deleted"), ("oof", "expired"), ("publish", 4)]
    client.unsubscribe(sub_id)


def test_subscribe_stream_with_timeout_heartbeats(uri):
    publisher = AMPS.Client("pub")
    publisher.connect(uri)
    publisher.logon()
    subscriber = AMPS.Client("sub")
    subscriber.connect(uri)
    subscriber.logon()
    stream = subscriber.subscribe("orders", "/qty > 10", timeout=5000).timeout(50)

    def publish_later() -> None:
        for i in range(5):
            publisher.publish("orders", json.dumps({"id": i, "qty": i * 10}))

    worker = threading.Thread(target=publish_later)
    worker.start()
    worker.join()
    got, heartbeats = [], 0
    for message in stream:
        if message is None:
            heartbeats += 1
            if heartbeats == 2:
                break
            continue
        got.append(json.loads(message.get_data())["id"])
    assert got == [2, 3, 4]
    assert heartbeats == 2
    stream.close()


def test_publisher_and_subscriber_meet_without_attach():
    AMPS.reset()
    address = "tcp://amps.example.net:9007/amps/json"
    sub = AMPS.Client("listener")
    sub.connect(address)
    sub.logon()
    received = []
    sub.subscribe(lambda m: received.append(m.get_data()), "ticks")
    pub = AMPS.Client("talker")
    pub.connect(address)
    pub.logon()
    for price in (101, 102):
        pub.publish("ticks", json.dumps({"px": price}))
    assert received == ['{"px": 101}', '{"px": 102}']
    AMPS.reset()


def test_non_sow_topic_is_pub_sub_only(uri):
    client = AMPS.Client("chatter")
    client.connect(uri)
    client.logon()
    stream = client.subscribe("chat", "/room = 'ops'").timeout(10)
    client.publish("chat", '{"room": "ops", "text": "deploying"}')
    client.publish("chat", '{"room": "dev", "text": "lunch?"}')
    texts = []
    for message in stream:
        if message is None:
            break
        texts.append(json.loads(message.get_data())["text"])
    assert texts == ["deploying"]
    try:
        client.sow("chat")
    except AMPS.InvalidTopicException:
        stored = False
    else:
        stored = True
    assert not stored


def test_non_sow_publishes_reach_subscribers(uri):
    client = AMPS.Client("chatter2")
    client.connect(uri)
    client.logon()
    texts = []
    client.subscribe(
        lambda m: texts.append(json.loads(m.get_data())["text"]), "chat", "/room = 'ops'"
    )
    client.publish("chat", '{"room": "ops", "text": "deploying"}')
    client.publish("chat", '{"room": "dev", "text": "lunch?"}')
    assert texts == ["deploying"]


def test_regex_subscription_spans_sow_and_pub_sub_topics(uri):
    client = AMPS.Client("regex-sub")
    client.connect(uri)
    client.logon()
    topics = []
    client.subscribe(lambda m: topics.append(m.get_topic()), "^orders.*|^alerts.*")
    client.publish("orders", '{"id": 1}')
    client.publish("orders-eu", '{"id": 1}')
    client.publish("alerts.fx", '{"level": 2}')
    client.publish("positions", '{"book": "B", "sym": "S"}')
    assert topics == ["orders", "orders-eu", "alerts.fx"]


def test_delta_subscribe_gets_changed_fields(uri):
    client = AMPS.Client("delta-sub")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 7, "qty": 1, "px": 10.5, "note": "n"}')
    updates = []
    client.delta_subscribe(lambda m: updates.append(json.loads(m.get_data())), "orders")
    # the record predates the subscription: still the key and the changed fields
    client.delta_publish("orders", '{"id": 7, "qty": 2}')
    client.publish("orders", '{"id": 7, "qty": 2, "px": 11.0, "note": "n"}')
    client.delta_publish("orders", '{"id": 7, "note": "m"}')
    assert updates == [
        {"id": 7, "qty": 2},
        {"id": 7, "px": 11.0},
        {"id": 7, "note": "m"},
    ]
    after_sow = []
    client.sow_and_delta_subscribe(after_sow.append, "orders", "/id = 7")
    client.delta_publish("orders", '{"id": 7, "qty": 3}')
    assert [m.get_command() for m in after_sow] == ["group_begin", "sow", "group_end", "publish"]
    assert json.loads(after_sow[-1].get_data()) == {"id": 7, "qty": 3}


def test_sow_and_delta_subscribe_send_empties(uri):
    client = AMPS.Client("empties")
    client.connect(uri)
    client.logon()
    client.publish("orders", '{"id": 1, "qty": 1}')
    quiet, chatty = [], []
    client.sow_and_delta_subscribe(quiet.append, "orders", send_empties=False)
    client.sow_and_delta_subscribe(chatty.append, "orders", send_empties=True)
    client.publish("orders", '{"id": 1, "qty": 1}')  # changes nothing
    assert [m.get_command() for m in quiet] == ["group_begin", "sow", "group_end"]
    assert [m.get_command() for m in chatty] == ["group_begin", "sow", "group_end", "publish"]


def test_unsubscribe_all_and_subscription_ids(uri):
    client = AMPS.Client("many")
    client.connect(uri)
    client.logon()
    got = []
    client.subscribe(got.append, "orders", sub_id="a")
    client.subscribe(got.append, "orders-eu", sub_id="b")
    try:
        client.subscribe(got.append, "orders", sub_id="a")
    except AMPS.SubscriptionAlreadyExistsException:
        duplicate_refused = True
    assert duplicate_refused
    client.publish("orders", '{"id": 1}')
    client.unsubscribe("all")
    client.publish("orders", '{"id": 2}')
    client.publish("orders-eu", '{"id": 2}')
    assert [m.get_sub_id() for m in got] == ["a"]


def test_stream_depth_and_close(uri):
    client = AMPS.Client("depth")
    client.connect(uri)
    client.logon()
    stream = client.subscribe("orders").max_depth(100)
    for i in range(3):
        client.publish("orders", json.dumps({"id": i}))
    assert stream.get_depth() == 3
    assert stream.get_max_depth() == 100
    first = next(stream)
    assert first is not None
    assert first.get_command() == "publish"
    assert stream.get_depth() == 2
    stream.close()
    assert [m.get_command() for m in stream] == ["publish", "publish"]  # drained, then ends


def test_sow_and_subscribe_restricted_to_sow_keys(uri):
    client = AMPS.Client("keyed-sub")
    client.connect(uri)
    client.logon()
    for i in (1, 2):
        client.publish("orders", json.dumps({"id": i}))
    key = next(m.get_sow_key() for m in client.sow("orders", "/id = 2") if m.get_command() == "sow")
    command = AMPS.Command("sow_and_subscribe").set_topic("orders").set_sow_keys(key)
    got = []
    client.execute_async(command, got.append)
    client.publish("orders", '{"id": 1, "v": 1}')
    client.publish("orders", '{"id": 2, "v": 1}')
    assert [(m.get_command(), m.get_sow_key()) for m in got if m.get_sow_key()] == [
        ("sow", key),
        ("publish", key),
    ]
