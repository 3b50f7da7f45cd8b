"""Live subscriptions in a read-only process (issue 25): a writer here, subscribers in
real separate processes (multiprocessing, spawn) that open the store read-only.

Each subscriber process subscribes, says it is ready, and collects its messages until
the writer's end marker (a record with ``"end": true``) arrives, then sends them back.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.topic.follow import FOLLOWER

CTX = mp.get_context("spawn")
WAIT = 30.0


def _row(m: Any) -> tuple[str, str | None, Any, str | None, bool]:
    doc = json.loads(m.data) if m.data else None
    return (m.command, m.sow_key, doc, m.reason, m.is_delta)


def reader_main(
    path: str,
    mode: str,
    flt: str | None,
    opts: dict[str, Any],
    q: Any,
    ready: Any,
    hold: tuple[Any, Any] | None = None,
) -> None:
    """A subscriber process: ``mode`` is ``subscribe`` or ``sow_and_subscribe``.

    With ``hold`` (reached, go): the first ``publish`` message blocks the follower
    until ``go`` is set, after signalling ``reached`` (the writer acts meanwhile).
    """
    store = SowStore(path, readonly=True)
    topic = store.topic("orders")
    got: list[Any] = []
    done = threading.Event()

    def on(m: Any) -> None:
        got.append(_row(m))
        if hold is not None and m.command == "publish" and len(hold) == 2:
            reached, go = hold
            hold_once.append(1)
            if len(hold_once) == 1:
                reached.set()
                go.wait(WAIT)
        if m.data and b'"end"' in bytes(m.data):
            done.set()

    hold_once: list[int] = []
    sub = getattr(topic, mode)(on, flt, **opts)
    ready.set()
    done.wait(WAIT)
    sub.unsubscribe()
    q.put(got)
    store.close()


def lifecycle_main(path: str, q: Any, ready: Any, published: Any) -> None:
    """Report the follower thread around unsubscribe and close; no delivery after unsubscribe."""

    def threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == "sowlib-follow"]

    store = SowStore(path, readonly=True)
    topic = store.topic("orders")
    got: list[Any] = []
    report: dict[str, Any] = {"before": threads()}
    sub = topic.subscribe(lambda m: got.append(_row(m)))
    report["subscribed"] = threads()
    sub.unsubscribe()
    deadline = time.monotonic() + 5
    while FOLLOWER.running and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)
    report["unsubscribed"] = threads()
    ready.set()
    published.wait(WAIT)
    time.sleep(0.1)
    report["after_unsubscribe"] = list(got)
    again: list[Any] = []
    topic.subscribe(lambda m: again.append(_row(m)))
    report["resubscribed"] = threads()
    store.close()
    report["closed"] = threads()
    q.put(report)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Any]:
    store = SowStore(tmp_path / "s")
    topic = store.create_topic("orders", keys=["/id"], expiration="1h", auto_compact=None)
    yield topic
    store.close()


def start(
    topic: Any, mode: str, flt: str | None = None, hold: bool = False, **opts: Any
) -> tuple[Any, Any, Any, tuple[Any, Any] | None]:
    q, ready = CTX.Queue(), CTX.Event()
    events = (CTX.Event(), CTX.Event()) if hold else None
    path = str(Path(topic.path).parent)
    proc = CTX.Process(target=reader_main, args=(path, mode, flt, opts, q, ready, events))
    proc.start()
    assert ready.wait(WAIT), "the subscriber process did not start"
    return proc, q, ready, events


def finish(topic: Any, proc: Any, q: Any) -> list[Any]:
    topic.publish({"id": 999, "p": 100, "end": True})
    got = q.get(timeout=WAIT)
    proc.join(WAIT)
    assert proc.exitcode == 0
    return [g for g in got if not (g[2] and isinstance(g[2], dict) and g[2].get("end"))]


def test_publish_reaches_a_reader_process(writer: Any) -> None:
    writer.publish({"id": 1, "p": 5})  # before the subscription: not delivered
    proc, q, _, _ = start(writer, "subscribe", "/p > 3")
    writer.publish({"id": 2, "p": 7})
    writer.publish({"id": 3, "p": 1})  # does not match
    writer.publish({"id": 1, "p": 6})
    got = finish(writer, proc, q)
    assert [(c, d) for c, _, d, _, _ in got] == [
        ("publish", {"id": 2, "p": 7}),
        ("publish", {"id": 1, "p": 6}),
    ]


def test_oof_on_update_out_of_the_filter_and_on_delete(writer: Any) -> None:
    writer.publish({"id": 1, "p": 5})
    writer.publish({"id": 2, "p": 5})
    proc, q, _, _ = start(writer, "sow_and_subscribe", "/p > 3", oof=True)
    writer.publish({"id": 1, "p": 1})  # leaves the filter
    writer.sow_delete_by_keys(writer.key_for({"id": 2}))
    writer.publish({"id": 3, "p": 1})  # never in focus: nothing
    writer.sow_delete_by_keys(writer.key_for({"id": 3}))
    got = finish(writer, proc, q)
    live = [(c, d, r) for c, _, d, r, _ in got if c in ("publish", "oof")]
    assert live == [
        ("oof", {"id": 1, "p": 1}, "match"),
        ("oof", {"id": 2, "p": 5}, "deleted"),
    ]


def test_expiration_reaches_the_reader_as_oof(writer: Any) -> None:
    proc, q, _, _ = start(writer, "subscribe", None, oof=True)
    writer.publish({"id": 1, "p": 5}, expiration=0.3)
    time.sleep(0.8)  # the writer stays idle: the reader's own clock expires it
    got = finish(writer, proc, q)
    assert [(c, d, r) for c, _, d, r, _ in got] == [
        ("publish", {"id": 1, "p": 5}, None),
        ("oof", {"id": 1, "p": 5}, "expired"),
    ]


def test_sow_and_subscribe_has_no_gap_and_no_duplicate(writer: Any) -> None:
    for i in range(300):
        writer.publish({"id": i, "p": 5})
    stop = threading.Event()
    count = [300]

    def publish_on() -> None:
        while not stop.is_set() and count[0] < 3000:
            writer.publish({"id": count[0], "p": 5})
            count[0] += 1

    pump = threading.Thread(target=publish_on)
    pump.start()
    try:
        proc, q, _, _ = start(writer, "sow_and_subscribe", "/p > 3")
        time.sleep(0.2)
    finally:
        stop.set()
        pump.join()
    got = finish(writer, proc, q)
    ids = [d["id"] for c, _, d, _, _ in got if c in ("sow", "publish")]
    assert len(ids) == len(set(ids)), "a record delivered twice"
    assert set(ids) == set(range(count[0])), "a record missed"
    kinds = [c for c, *_ in got]
    last_sow = max(i for i, c in enumerate(kinds) if c == "group_end")
    assert all(c == "sow" for c in kinds[1:last_sow])
    assert all(c == "publish" for c in kinds[last_sow + 1 :])


def test_delta_subscription_gets_the_changed_fields(writer: Any) -> None:
    writer.publish({"id": 1, "a": 1, "b": 2})
    proc, q, _, _ = start(writer, "subscribe", None, delta=True)
    writer.publish({"id": 1, "a": 5, "b": 2})
    writer.delta_publish({"id": 1, "b": 9})
    writer.publish({"id": 2, "a": 1, "b": 1})
    got = finish(writer, proc, q)
    assert [(d, delta) for _, _, d, _, delta in got] == [
        ({"id": 1, "a": 5}, True),
        ({"id": 1, "b": 9}, True),
        ({"id": 2, "a": 1, "b": 1}, False),
    ]


def test_a_reader_behind_a_compaction_resumes_exactly(writer: Any) -> None:
    for i in range(10):
        writer.publish({"id": i, "p": 5})
    proc, q, _, events = start(writer, "subscribe", "/p > 3", hold=True, oof=True)
    assert events is not None
    reached, go = events
    writer.publish({"id": 100, "p": 5})  # the reader blocks in its handler on this one
    assert reached.wait(WAIT)
    writer.publish({"id": 1, "p": 6})  # updated
    writer.publish({"id": 2, "p": 1})  # out of focus (never delivered: no OOF)
    writer.publish({"id": 100, "p": 1})  # delivered before: OOF match
    writer.publish({"id": 3, "p": 7})
    writer.publish({"id": 3, "p": 8})  # updated twice: only the latest survives compaction
    writer.publish({"id": 50, "p": 9})  # new
    writer.publish({"id": 51, "p": 9})
    writer.sow_delete_by_keys(writer.key_for({"id": 51}))  # new and gone: nothing
    writer.sow_delete_by_keys(writer.key_for({"id": 4}))  # existed, never delivered
    writer.compact()
    writer.publish({"id": 60, "p": 9})  # after the compaction
    go.set()
    got = finish(writer, proc, q)
    rows = [(c, d, r) for c, _, d, r, _ in got]
    assert rows[0] == ("publish", {"id": 100, "p": 5}, None)
    rest = rows[1:]
    assert sorted(rest, key=repr) == sorted(
        [
            ("publish", {"id": 1, "p": 6}, None),
            ("oof", {"id": 100, "p": 1}, "match"),
            ("publish", {"id": 3, "p": 8}, None),
            ("publish", {"id": 50, "p": 9}, None),
            ("publish", {"id": 60, "p": 9}, None),
        ],
        key=repr,
    )


def test_unsubscribe_stops_the_follower_and_close_stops_the_thread(writer: Any) -> None:
    q, ready, published = CTX.Queue(), CTX.Event(), CTX.Event()
    path = str(Path(writer.path).parent)
    proc = CTX.Process(target=lifecycle_main, args=(path, q, ready, published))
    proc.start()
    assert ready.wait(WAIT)
    writer.publish({"id": 1, "p": 5})
    published.set()
    report = q.get(timeout=WAIT)
    proc.join(WAIT)
    assert report == {
        "before": [],
        "subscribed": ["sowlib-follow"],
        "unsubscribed": [],
        "after_unsubscribe": [],
        "resubscribed": ["sowlib-follow"],
        "closed": [],
    }


def compat_main(path: str, q: Any, ready: Any) -> None:
    """An AMPS-client program in the subscriber process, over a read-only store."""
    from sowlib import compat

    store = SowStore(path, readonly=True)
    compat.attach(store, "tcp://localhost:9007/amps/json")
    client = compat.Client("live-subscriber")
    client.connect("tcp://localhost:9007/amps/json")
    client.logon()
    got: list[Any] = []
    done = threading.Event()

    def on_message(m: Any) -> None:
        data = m.get_data()
        got.append((m.get_command(), json.loads(data) if data else None))
        if '"end"' in data:
            done.set()

    client.sow_and_subscribe(on_message, "orders", "/p > 3", options="oof")
    ready.set()
    done.wait(WAIT)
    q.put(got)
    client.close()
    store.close()


def test_an_amps_client_program_in_a_reader_process(writer: Any) -> None:
    writer.publish({"id": 1, "p": 5})
    q, ready = CTX.Queue(), CTX.Event()
    proc = CTX.Process(target=compat_main, args=(str(Path(writer.path).parent), q, ready))
    proc.start()
    assert ready.wait(WAIT)
    writer.publish({"id": 2, "p": 7})
    writer.publish({"id": 1, "p": 0})
    writer.publish({"id": 999, "p": 100, "end": True})
    got = q.get(timeout=WAIT)
    proc.join(WAIT)
    assert got == [
        ("group_begin", None),
        ("sow", {"id": 1, "p": 5}),
        ("group_end", None),
        ("publish", {"id": 2, "p": 7}),
        ("oof", {"id": 1, "p": 0}),
        ("publish", {"id": 999, "p": 100, "end": True}),
    ]


def test_refresh_delivers_before_it_returns(writer: Any) -> None:
    reader = SowStore(Path(writer.path).parent, readonly=True)
    try:
        got: list[Any] = []
        reader.topic("orders").subscribe(lambda m: got.append(_row(m)), "/p > 3")
        for i in range(50):
            writer.publish({"id": i, "p": 4 + i % 2})
            reader.refresh()
            assert got[-1][2] == {"id": i, "p": 4 + i % 2}
        assert len(got) == 50
    finally:
        reader.close()
    assert not [t for t in threading.enumerate() if t.name == "sowlib-follow"]


def test_a_raising_subscription_loses_no_record(writer: Any) -> None:
    reader = SowStore(Path(writer.path).parent, readonly=True)
    try:
        topic = reader.topic("orders")
        seen: list[Any] = []

        def boom(m: Any) -> None:
            seen.append(m.sow_key)
            if len(seen) == 1:
                raise RuntimeError("handler failed")

        others: list[Any] = []
        topic.subscribe(others.append)
        sub = topic.subscribe(boom)
        sub.raises = True  # as a transaction log's subscription: the error propagates
        with topic._lock:  # the follower thread waits: this refresh delivers the three
            for i in range(3):
                writer.publish({"id": i, "p": 1})
            with pytest.raises(RuntimeError, match="handler failed"):
                reader.refresh()
        assert len(topic) == 3
        assert len(seen) == 3
        assert len(others) == 3
    finally:
        reader.close()


def test_close_while_a_handler_runs_on_the_follower_thread(writer: Any) -> None:
    reader = SowStore(Path(writer.path).parent, readonly=True)
    in_handler, closing = threading.Event(), threading.Event()
    got: list[Any] = []

    def handler(m: Any) -> None:
        got.append(m.sow_key)
        in_handler.set()
        closing.wait(WAIT)
        time.sleep(0.05)  # the close below waits for this delivery to end

    reader.topic("orders").subscribe(handler)
    writer.publish({"id": 1, "p": 1})
    assert in_handler.wait(WAIT)
    closer = threading.Thread(target=reader.close)
    closer.start()
    closing.set()
    closer.join(WAIT)
    assert not closer.is_alive()
    writer.publish({"id": 2, "p": 1})
    time.sleep(0.05)
    assert len(got) == 1
    assert not [t for t in threading.enumerate() if t.name == "sowlib-follow"]
