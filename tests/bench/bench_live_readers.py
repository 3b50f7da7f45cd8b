"""Latency from a writer's publish to the handler of subscribers in other processes.

A writer publishes at a steady pace; N subscriber processes (spawned) each open the
store read-only and subscribe; each handler stamps the arrival time against the
publish time carried in the message (both ``time.time()`` of one machine). Prints the
p50/p99/max latency over all deliveries, and the CPU seconds the subscriber processes
used from subscribing to their last delivery (waiting for the others to start
included). Run it as a script::

    python tests/bench/bench_live_readers.py --subscribers 10 --messages 2000

``--floor`` runs, after each sowlib run, the same pace and number of processes
without sowlib: the writer puts each message (the same JSON) into a fixed slot of a
memory-mapped file and rings a bell file; each reader maps the file, waits on inotify
(sowlib's ``Watcher``), and hands every new slot to the same handler. It shows what
the machine gives a Python process that does nothing but follow a mapped file, so
sowlib's own cost per delivery can be read off against it (``--rounds`` alternates
the two).

or collected with the other benchmarks (``-o python_files=bench_*.py``; small size).
"""

from __future__ import annotations

import argparse
import json
import mmap
import multiprocessing as mp
import os
import statistics
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sowlib import SowStore
from sowlib.storage.bell import Watcher

CTX = mp.get_context("spawn")
#: The floor's slot: the message's length, then its bytes.
SLOT = 128
_LEN = struct.Struct("<i")


def subscriber(path: str, expected: int, q: Any, ready: Any) -> None:
    """One subscriber process: latencies (seconds) of every delivery, sent on ``q``."""
    store = SowStore(path, readonly=True)
    lat: list[float] = []
    done = threading.Event()

    def on(m: Any) -> None:
        now = time.time()
        doc = json.loads(m.data)
        lat.append(now - doc["t"])
        if len(lat) >= expected:
            done.set()

    sub = store.topic("bench").subscribe(on)
    ready.set()
    start = time.process_time()
    done.wait(60 + expected / 100)
    cpu = time.process_time() - start  # this process's CPU while subscribed
    sub.unsubscribe()
    q.put((lat, cpu))
    store.close()


def floor_subscriber(path: str, expected: int, q: Any, ready: Any) -> None:
    """The floor's reader: every new slot of the mapped file to the handler, woken by
    inotify on the file's directory; latencies and CPU as :func:`subscriber` sends them."""
    watcher = Watcher()
    watcher.watch(os.path.dirname(path))
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), SLOT * (expected + 1), access=mmap.ACCESS_READ)
    lat: list[float] = []
    ready.set()
    start = time.process_time()
    nxt = 0
    deadline = time.monotonic() + 60 + expected / 100
    while nxt < expected and time.monotonic() < deadline:
        watcher.wait(0.05)
        while nxt < expected:
            (size,) = _LEN.unpack_from(mm, nxt * SLOT)
            if size == 0:
                break
            data = mm[nxt * SLOT + 4 : nxt * SLOT + 4 + size]
            now = time.time()
            doc = json.loads(data)  # the handler of subscriber()
            lat.append(now - doc["t"])
            nxt += 1
    cpu = time.process_time() - start
    watcher.close()
    mm.close()
    q.put((lat, cpu))


def _paced(messages: int, pace: float, send: Any) -> None:
    start = time.perf_counter()
    for i in range(messages):
        due = start + i * pace
        while (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)
        send(i)


def _start(target: Any, args: tuple[Any, ...], subscribers: int, q: Any) -> list[Any]:
    procs = []
    for _ in range(subscribers):
        ready = CTX.Event()
        proc = CTX.Process(target=target, args=(*args, q, ready))
        proc.start()
        procs.append((proc, ready))
    for _, ready in procs:
        assert ready.wait(60), "a subscriber did not start"
    time.sleep(0.2)
    return procs


def _collect(procs: list[Any], q: Any, subscribers: int, messages: int) -> dict[str, float]:
    lat: list[float] = []
    cpu = 0.0
    for _ in procs:
        got, used = q.get(timeout=120)
        lat.extend(got)
        cpu += used
    for proc, _ in procs:
        proc.join(30)
    lat.sort()
    n = len(lat)
    return {
        "deliveries": n,
        "expected": subscribers * messages,
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[min(n - 1, int(n * 0.99))],
        "max_ms": 1000 * lat[-1],
        "subscriber_cpu_s": cpu,  # every subscriber process, from subscribing to the last
        "cpu_per_delivery_us": 1e6 * cpu / max(n, 1),
    }


def run_floor(subscribers: int, messages: int, pace: float, keys: int) -> dict[str, float]:
    """:func:`run` without sowlib: a mapped file of fixed slots and a bell file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "slots")
        with open(path, "wb") as f:
            f.truncate(SLOT * (messages + 1))
        fd = os.open(path, os.O_RDWR)
        mm = mmap.mmap(fd, SLOT * (messages + 1), access=mmap.ACCESS_WRITE)
        bell = os.open(str(Path(tmp) / "bell"), os.O_WRONLY | os.O_CREAT, 0o644)
        q = CTX.Queue()
        procs = _start(floor_subscriber, (path, messages), subscribers, q)

        def send(i: int) -> None:
            data = json.dumps({"id": i % keys, "t": time.time(), "v": i}).encode()
            if len(data) > SLOT - _LEN.size:  # it would run into the next slot
                raise ValueError(f"a message of {len(data)} bytes does not fit a floor slot")
            mm[i * SLOT + 4 : i * SLOT + 4 + len(data)] = data
            mm[i * SLOT : i * SLOT + 4] = _LEN.pack(len(data))  # the length last: complete
            os.pwrite(bell, b"\x01", 0)

        _paced(messages, pace, send)
        result = _collect(procs, q, subscribers, messages)
        mm.close()
        os.close(fd)
        os.close(bell)
    return result


def run(subscribers: int, messages: int, pace: float, keys: int) -> dict[str, float]:
    """Publish ``messages`` (one every ``pace`` seconds) to ``subscribers`` processes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "store")
        store = SowStore(path)
        topic = store.create_topic("bench", keys=["/id"])
        topic.publish({"id": -1, "t": 0.0})
        q = CTX.Queue()
        procs = _start(subscriber, (path, messages), subscribers, q)
        _paced(messages, pace, lambda i: topic.publish({"id": i % keys, "t": time.time(), "v": i}))
        result = _collect(procs, q, subscribers, messages)
        store.close()
    return result


def test_live_reader_latency_small() -> None:
    """Small size under the benchmark run: every delivery arrives (no timing asserted)."""
    for measure in (run, run_floor):
        result = measure(2, 200, 0.002, 50)
        print(measure.__name__, result)
        assert result["deliveries"] == result["expected"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--pace", type=float, default=0.002, help="seconds between publishes")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--floor", action="store_true", help="also run the floor, alternately")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    todo = (run, run_floor) if args.floor else (run,)
    for _ in range(args.rounds):
        for measure in todo:
            result = measure(args.subscribers, args.messages, args.pace, args.keys)
            print(json.dumps({"run": measure.__name__, **result}))


if __name__ == "__main__":
    main()
