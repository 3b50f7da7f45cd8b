"""Benchmarks of publish per message type, and of delta publish."""

from __future__ import annotations

from typing import Any

import pytest
from scen_codecs import CODECS
from workload import KEYS, render

MESSAGES = 20_000


@pytest.mark.benchmark(group="publish-codec")
@pytest.mark.parametrize("message_type", CODECS)
def test_publish_many_per_codec(benchmark: Any, new_topic: Any, message_type: str) -> None:
    msgs = render(message_type, MESSAGES)

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        return (new_topic(keys=[KEYS[message_type]], message_type=message_type),), {}

    result = benchmark.pedantic(lambda t: t.publish_many(msgs), setup=setup, rounds=3)
    assert len(result) == MESSAGES


@pytest.mark.benchmark(group="delta")
@pytest.mark.parametrize("delta", [False, True], ids=["publish", "delta_publish"])
def test_publish_vs_delta(benchmark: Any, messages: Any, new_topic: Any, delta: bool) -> None:
    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        return (new_topic(),), {}

    def run(topic: Any) -> int:
        fn = topic.delta_publish if delta else topic.publish
        for m in messages:
            fn(m)
        return len(topic)

    assert benchmark.pedantic(run, setup=setup, rounds=3) > 0
