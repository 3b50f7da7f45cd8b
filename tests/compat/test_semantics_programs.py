"""Where the in-process client behaved unlike AMPS: delta subscriptions to records older
than the subscription, bounded streams, handler exceptions of queries, the HA chooser.

Only the import line differs from a program written for the real client.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

import sowlib.compat as AMPS  # was: import AMPS


def connected(uri, name):
    client = AMPS.Client(name)
    client.connect(uri)
    client.logon()
    return client


def test_delta_subscribe_to_records_published_before_it(uri):
    publisher = connected(uri, "publisher")
    publisher.publish("positions", '{"book": "B1", "sym": "IBM", "qty": 100, "px": 120.5}')
    publisher.publish("positions", '{"book": "B2", "sym": "IBM", "qty": 50, "px": 120.5}')
    subscriber = connected(uri, "delta-watcher")
    command = AMPS.Command("delta_subscribe").set_topic("positions").set_filter("/qty > 10")
    updates = []
    subscriber.execute_async(command, lambda m: updates.append(json.loads(m.get_data())))
    publisher.publish("positions", '{"book": "B1", "sym": "IBM", "qty": 200, "px": 120.5}')
    publisher.delta_publish("positions", '{"book": "B2", "sym": "IBM", "px": 121}')
    publisher.publish("positions", '{"book": "B3", "sym": "MSFT", "qty": 20, "px": 400}')
    assert updates == [
        {"book": "B1", "sym": "IBM", "qty": 200},  # the keys and what changed
        {"book": "B2", "sym": "IBM", "px": 121},
        {"book": "B3", "sym": "MSFT", "qty": 20, "px": 400},  # new: the whole record
    ]


def test_max_depth_bounds_a_stream_before_it_is_first_read(uri):
    subscriber = connected(uri, "slow-reader")
    stream = subscriber.subscribe("orders").max_depth(5)
    publisher = connected(uri, "fast-writer")
    published = []

    def publish_all():
        for i in range(30):
            publisher.publish("orders", json.dumps({"id": i}))
            published.append(i)

    worker = threading.Thread(target=publish_all)
    worker.start()
    deadline = time.monotonic() + 10
    while stream.get_depth() < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # give the publisher the chance to overfill, if it could
    assert stream.get_depth() == 5
    assert len(published) <= 6  # the sixth publish waits inside its delivery
    got, deepest = [], 0
    for message in stream.timeout(2000):
        if message is None:
            break
        deepest = max(deepest, stream.get_depth())
        got.append(json.loads(message.get_data())["id"])
        if len(got) == 30:
            break
    worker.join(10)
    assert got == list(range(30))
    assert deepest <= 5
    stream.close()


def test_sow_handler_exception_goes_to_the_exception_listener(uri):
    client = connected(uri, "query-with-listener")
    client.publish("orders", '{"id": 1}')
    client.publish("orders", '{"id": 2}')
    problems, seen = [], []

    def on_message(message):
        if message.get_command() == "sow":
            seen.append(json.loads(message.get_data())["id"])
            if len(seen) == 1:
                raise ValueError("bad record")

    client.set_exception_listener(problems.append)
    query_id = client.sow(on_message, "orders", "/id > 0")
    assert query_id
    assert sorted(seen) == [1, 2]  # the query went on
    assert [str(p) for p in problems] == ["bad record"]
    acks = []
    client.sow_delete(lambda m: (acks.append(m), 1 / 0), "orders", "/id = 1")
    assert len(acks) == 1
    assert isinstance(problems[-1], ZeroDivisionError)


def test_sow_handler_exception_without_a_listener_reaches_the_caller(uri):
    client = connected(uri, "query-without-listener")
    client.publish("orders", '{"id": 1}')

    def on_message(message):
        raise ValueError("bad record")

    with pytest.raises(ValueError, match="bad record"):
        client.sow(on_message, "orders")


class RecordingChooser(AMPS.DefaultServerChooser):
    def __init__(self):
        super().__init__()
        self.reports = []

    def report_success(self, connection_info):
        self.reports.append(("success", connection_info["uri"]))

    def report_failure(self, exception, connection_info):
        self.reports.append(("failure", type(exception).__name__))


def test_connect_and_logon_reports_to_the_chooser(uri):
    client = AMPS.HAClient("ha")
    chooser = RecordingChooser()
    chooser.add(uri)
    client.set_server_chooser(chooser)
    client.connect_and_logon()
    assert chooser.reports == [("success", uri)]
    client.disconnect()

    bad = AMPS.HAClient("ha-bad")
    broken = RecordingChooser()
    broken.add("not a uri")
    bad.set_server_chooser(broken)
    with pytest.raises(AMPS.InvalidURIException):
        bad.connect_and_logon()
    assert broken.reports == [("failure", "InvalidURIException")]


def test_default_chooser_keeps_its_reports(uri):
    client = AMPS.HAClient("ha-default")
    chooser = AMPS.DefaultServerChooser()
    chooser.add(uri)
    client.setServerChooser(chooser)
    client.connectAndLogon()
    assert chooser.successes == [{"client_name": "ha-default", "uri": uri}]
    assert chooser.get_error() == ""
