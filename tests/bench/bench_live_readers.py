"""Latency from a writer's publish to the handler of subscribers in other processes.

A writer publishes at a steady pace; N subscriber processes (spawned) each open the
store read-only and subscribe; each handler stamps the arrival time against the
publish time carried in the message (both ``time.time()`` of one machine). Prints the
p50/p99/max latency over all deliveries, and the CPU seconds the subscriber processes
used from subscribing to their last delivery (waiting for the others to start
included). Run it as a script::

    python tests/bench/bench_live_readers.py --subscribers 10 --messages 2000

or collected with the other benchmarks (``-o python_files=bench_*.py``; small size).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sowlib import SowStore

CTX = mp.get_context("spawn")


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


def run(subscribers: int, messages: int, pace: float, keys: int) -> dict[str, float]:
    """Publish ``messages`` (one every ``pace`` seconds) to ``subscribers`` processes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "store")
        store = SowStore(path)
        topic = store.create_topic("bench", keys=["/id"])
        topic.publish({"id": -1, "t": 0.0})
        q = CTX.Queue()
        procs = []
        for _ in range(subscribers):
            ready = CTX.Event()
            proc = CTX.Process(target=subscriber, args=(path, messages, q, ready))
            proc.start()
            procs.append((proc, ready))
        for _, ready in procs:
            assert ready.wait(60), "a subscriber did not start"
        time.sleep(0.2)
        start = time.perf_counter()
        for i in range(messages):
            due = start + i * pace
            while (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            topic.publish({"id": i % keys, "t": time.time(), "v": i})
        lat: list[float] = []
        cpu = 0.0
        for _ in procs:
            got, used = q.get(timeout=120)
            lat.extend(got)
            cpu += used
        for proc, _ in procs:
            proc.join(30)
        store.close()
    lat.sort()
    n = len(lat)
    return {
        "deliveries": n,
        "expected": subscribers * messages,
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[min(n - 1, int(n * 0.99))],
        "max_ms": 1000 * lat[-1],
        "subscriber_cpu_s": cpu,  # every subscriber process, from subscribing to the last
    }


def test_live_reader_latency_small() -> None:
    """Small size under the benchmark run: every delivery arrives (no timing asserted)."""
    result = run(subscribers=2, messages=200, pace=0.002, keys=50)
    print(result)
    assert result["deliveries"] == result["expected"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--pace", type=float, default=0.002, help="seconds between publishes")
    parser.add_argument("--keys", type=int, default=100)
    args = parser.parse_args()
    result = run(args.subscribers, args.messages, args.pace, args.keys)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
