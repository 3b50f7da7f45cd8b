"""Run the queue compliance cases of ``compliance.json`` against a real journal."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib.journal import Journal
from sowlib.queues import Consumer, Delivery, Queue, QueueDef

CASES = json.loads((Path(__file__).parent / "compliance.json").read_text())["cases"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Run:
    """One case: a journal recording ``work`` and the queue ``todo`` over it."""

    def __init__(self, directory: Path, settings: dict[str, Any]) -> None:
        self.directory = directory
        self.clock = Clock()
        self.definition = QueueDef("todo", underlying_topic="work", **settings)
        self.received: dict[str, list[int]] = defaultdict(list)
        self.bookmarks: dict[int, str] = {}
        self.deliveries: dict[int, int] = {}
        self.consumers: dict[str, Consumer] = {}
        self.open()

    def open(self) -> None:
        self.journal = Journal(self.directory, ["work"], clock=self.clock)
        self.queue = Queue(self.journal, self.definition, clock=self.clock)

    def close(self) -> None:
        self.queue.close()
        self.journal.close()

    def callback(self, name: str) -> Callable[[Delivery], None]:
        def got(delivery: Delivery) -> None:
            n = json.loads(delivery.entry.data)["n"]
            self.received[name].append(n)
            self.bookmarks[n] = delivery.bookmark
            self.deliveries[n] = delivery.deliveries

        return got

    def step(self, step: dict[str, Any]) -> None:
        if "publish" in step:
            self.journal.record(
                "publish", "work", "json", json.dumps({"n": step["publish"]}).encode()
            )
        elif "subscribe" in step:
            name = step["subscribe"]
            kwargs = {"max_backlog": step["max_backlog"]} if step.get("max_backlog") else {}
            self.received.setdefault(name, [])
            self.consumers[name] = self.queue.subscribe(
                self.callback(name), step.get("filter"), name=name, **kwargs
            )
        elif "ack" in step:
            assert self.queue.ack(self.bookmarks[step["n"]], step.get("options")) == 1
        elif "advance" in step:
            self.clock.now += step["advance"]
        elif "tick" in step:
            self.queue.tick()
        elif "close" in step:
            self.consumers.pop(step["close"]).close()
        elif "restart" in step:
            self.close()
            self.consumers.clear()
            self.open()
        elif "expect" in step:
            self.check(step["expect"])
        else:
            raise AssertionError(f"unknown step {step}")

    def check(self, want: dict[str, Any]) -> None:
        for name, ns in want.get("received", {}).items():
            assert self.received[name] == ns, name
        for name, count in want.get("count", {}).items():
            assert len(self.received[name]) == count, name
        if "queued" in want:
            assert len(self.queue) == want["queued"]
        if "leased" in want:
            assert self.queue.leased == want["leased"]
        for n, count in want.get("deliveries", {}).items():
            assert self.deliveries[int(n)] == count
        if "browse" in want:
            assert [json.loads(d.entry.data)["n"] for d in self.queue.browse()] == want["browse"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_queue_compliance(case: dict[str, Any], tmp_path: Path) -> None:
    run = Run(tmp_path, case["queue"])
    try:
        for number, step in enumerate(case["steps"], 1):
            try:
                run.step(step)
            except AssertionError as exc:
                raise AssertionError(f"step {number} {step}: {exc}") from None
    finally:
        run.close()
