"""Runs the derived-topic compliance cases (``tests/views/cases/*.json``).

A file is a list of cases. A case names the underlying topic's settings
(``topic``: ``keys``, ``expiration``; or ``topics``: several by name, for a join, and
a step's ``topic`` says which one it publishes to or deletes from), then either a
``view`` (``projection``, ``grouping``, ``filter``, ``join``) or a ``conflated`` topic
(``interval``, ``filter``, ``expiration``), and ``steps``. A step does one thing:

- ``publish``: a message (with ``expiration``: seconds to live);
- ``delete``: a filter, deleted with ``sow_delete``;
- ``advance``: seconds the clock moves; expirations then run;
- ``tick``: the clock moves by the interval and the store's timer runs;

then checks what is expected after it: ``view`` (the derived topic's documents, in
any order) and ``messages`` (what a ``sow_and_subscribe`` with OOF on the derived
topic received during the step: ``{"command": "publish", "doc": ...}`` or
``{"command": "oof", "reason": ...}``, in order).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from tests.conftest import FakeClock

CASES = Path(__file__).parent / "cases"


def _load() -> list[Any]:
    out = []
    for path in sorted(CASES.glob("*.json")):
        for number, case in enumerate(json.loads(path.read_text()), 1):
            out.append(pytest.param(case, id=f"{path.stem}-{number}"))
    return out


def _canon(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)


def _seen(message: Any) -> dict[str, Any]:
    if message.command == "oof":
        return {"command": "oof", "reason": message.reason}
    return {"command": message.command, "doc": json.loads(message.data)}


@pytest.mark.parametrize("case", _load())
def test_compliance_case(case: dict[str, Any]) -> None:
    clock = FakeClock()
    with SowStore(clock=clock) as store:
        topics = case.get("topics", {"source": case.get("topic", {})})
        for name, settings in topics.items():
            store.create_topic(
                name, keys=settings.get("keys", ["/id"]), expiration=settings.get("expiration")
            )
        first = next(iter(topics))
        source = store.topic(first)
        for message in case.get("initial", []):
            source.publish(message)
        interval = 0.0
        if "view" in case:
            spec = case["view"]
            derived = store.create_view(
                "derived",
                None if "join" in spec else "source",
                projection=spec["projection"],
                grouping=spec.get("grouping", []),
                filter=spec.get("filter"),
                join=spec.get("join"),
            )
        else:
            spec = case["conflated"]
            interval = float(spec["interval"])
            derived = store.create_conflated_topic(
                "derived",
                "source",
                interval=interval,
                filter=spec.get("filter"),
                expiration=spec.get("expiration"),
            )
        received: list[Any] = []
        derived.sow_and_subscribe(received.append, oof=True)
        received.clear()
        for number, step in enumerate(case["steps"], 1):
            where = f"step {number}: {step.get('comment', '')}"
            target = store.topic(step.get("topic", first))
            if "publish" in step:
                target.publish(step["publish"], expiration=step.get("expiration"))
            elif "delete" in step:
                target.sow_delete(step["delete"])
            elif "advance" in step:
                clock.advance(step["advance"])
                store.process_expirations()
            elif "tick" in step:
                clock.advance(interval)
                store.tick()
            if "view" in step:
                got = sorted(_canon(r.doc) for r in derived.sow())
                assert got == sorted(_canon(d) for d in step["view"]), where
            if "messages" in step:
                assert [_seen(m) for m in received] == step["messages"], where
            received.clear()
