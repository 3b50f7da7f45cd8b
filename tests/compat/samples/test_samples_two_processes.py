"""The official samples as two processes: the subscriber's store opened read-only.

The publisher runs in one process over ``SowStore.from_config("sample.xml")`` (the
writer), the subscriber in another over ``SowStore.from_config("sample.xml",
readonly=True)`` in the same directory; both are ``runner.py --serve`` processes
driven step by step from here, and the assertions on the subscriber's printed output
are the one-process test's. Nothing in the samples is edited.

A read-only process follows the writer: SOW topics through their logs, topics the
transaction log records (``messages-history`` of the replay pair) through the writer's
journal, other pub/sub topics (``messages`` of the console and composite pairs;
``messages-sow`` over ``/amps/fix``, since ``sample.xml`` has no fix SOW topic) through
the store's pub/sub bus.

The queue pair runs too: the consumer's leases and acknowledgements go through the
writer (its outbox and inbox under the store directory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.journal import FollowedJournal

from .test_official_samples import (
    SOW_PUB,
    Result,
    check_composite,
    check_console,
    check_fix,
    check_nvfix,
    check_oof,
    check_queue,
    check_replay,
    check_sow,
    check_sow_and_subscribe,
)

ROOT = Path(__file__).resolve().parents[3]
RUNNER = Path(__file__).with_name("runner.py")
TIMEOUT = 120.0


class Served:
    """One ``runner.py --serve`` process: steps in on stdin, ``ok``/``failed`` back."""

    def __init__(
        self, samples: Path, workdir: Path, name: str, readonly: bool, shim_array: bool = False
    ) -> None:
        self.result_path = workdir.parent / f"{name}.json"
        scenario = {
            "samples": str(samples),
            "config": str(samples / "sample.xml"),
            "result": str(self.result_path),
            "readonly": readonly,
            "shim_array": shim_array,
        }
        spec = workdir.parent / f"{name}-scenario.json"
        spec.write_text(json.dumps(scenario))
        self.proc = subprocess.Popen(
            [sys.executable, str(RUNNER), "--serve", str(spec)],
            cwd=workdir,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.alive = self.answer() == "ready"

    def answer(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def step(self, step: list[Any]) -> bool:
        """Run ``step`` in the process; False when it failed (the process then ends)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(step) + "\n")
        self.proc.stdin.flush()
        self.alive = self.answer() == "ok"
        return self.alive

    def finish(self) -> Result:
        if self.alive:
            assert self.proc.stdin is not None
            self.proc.stdin.write('["finish"]\n')
            self.proc.stdin.flush()
        _, errors = self.proc.communicate(timeout=TIMEOUT)
        assert self.proc.returncode == 0, errors
        result: Result = json.loads(self.result_path.read_text())
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


W, R = "writer", "reader"


def subscribe_then_publish(sub: str, pub: str, text: str, count: int) -> list[Any]:
    """The subscriber waits in the reader process; the publisher runs in the writer."""
    return [
        (R, ["start", sub]),
        (R, ["blocked", sub]),
        (W, ["run", pub]),
        (R, ["output", sub, text, count]),
    ]


CASES: list[Any] = [
    pytest.param(
        subscribe_then_publish("AMPSConsoleSubscriber.py", "AMPSConsolePublisher.py", "Hello", 1),
        check_console,
        id="console",
    ),
    pytest.param(
        subscribe_then_publish(
            "AMPSFIXShredderSubscriber.py", "AMPSFIXBuilderPublisher.py", "2 123", 1
        ),
        check_fix,
        id="fix",
    ),
    pytest.param(
        subscribe_then_publish(
            "CompositeMessageSubscriber.py", "CompositeMessagePublisher.py", "parts", 3
        ),
        check_composite,
        id="composite",
    ),
    pytest.param(
        [
            (W, ["start", "AMPSPublishForReplay.py"]),
            (W, ["output", "AMPSPublishForReplay.py", "Published 30", 1]),
            (R, ["run", "AMPSSubscribeForReplay.py"]),
            (R, ["run", "AMPSSubscribeForReplay.py"]),
        ],
        check_replay,
        id="replay",
    ),
    pytest.param(
        [(W, ["run", SOW_PUB]), (R, ["run", "AMPSSOWConsoleSubscriber.py"])],
        check_sow,
        id="sow",
    ),
    pytest.param(
        [
            (W, ["run", SOW_PUB]),
            (R, ["start", "AMPSSOWandSubscribeConsoleSubscriber.py"]),
            (R, ["output", "AMPSSOWandSubscribeConsoleSubscriber.py", "Done receiving", 1]),
            (R, ["blocked", "AMPSSOWandSubscribeConsoleSubscriber.py"]),
            (W, ["run", SOW_PUB]),
            (R, ["output", "AMPSSOWandSubscribeConsoleSubscriber.py", "new information", 2]),
        ],
        check_sow_and_subscribe,
        id="sow-and-subscribe",
    ),
    pytest.param(
        [
            (W, ["run", SOW_PUB]),
            (R, ["start", "AMPSSOWandSubscribeWithOOF.py"]),
            (R, ["output", "AMPSSOWandSubscribeWithOOF.py", "Done receiving", 1]),
            (R, ["blocked", "AMPSSOWandSubscribeWithOOF.py"]),
            (W, ["run", "AMPSUpdateForOOF.py"]),
            (R, ["output", "AMPSSOWandSubscribeWithOOF.py", "expired", 1]),
        ],
        check_oof,
        id="oof",
    ),
    pytest.param(
        [
            (R, ["start", "AMPSNVFIXShredderSubscriber.py"]),
            (R, ["blocked", "AMPSNVFIXShredderSubscriber.py"]),
            (W, ["run", "AMPSNVFIXBuilderPublisher.py"]),
            (R, ["blocked", "AMPSNVFIXShredderSubscriber.py"]),
        ],
        check_nvfix,
        id="nvfix",
    ),
    pytest.param(
        [
            (W, ["run", "AMPSQueuePublisher.py"]),
            (R, ["start", "AMPSQueueConsumer.py"]),
            (R, ["output", "AMPSQueueConsumer.py", "Hello", 1000]),
        ],
        check_queue,
        id="queue",
    ),
]


def _messages(items: Any) -> list[Any]:
    """A query's messages as the AMPS idiom uses them (the stream's type also admits
    the text and None a stream can yield in other shapes)."""
    return list(items)


def merged(writer: Result, reader: Result) -> Result:
    """Both processes' results as one, as the one-process checks read them."""
    out: Result = {
        "note": writer["note"] + reader["note"],
        "failure": writer["failure"] + reader["failure"],
        "errors": {**writer["errors"], **reader["errors"]},
        "finished": writer["finished"] + reader["finished"],
    }
    for part in ("stdout", "stderr"):
        out[part] = {**writer[part], **reader[part]}
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("steps", "check"), CASES)
def test_sample_pair_in_two_processes(
    samples_dir: Path,
    tmp_path: Path,
    steps: list[tuple[str, list[Any]]],
    check: Callable[[Result], None],
) -> None:
    workdir = tmp_path / "amps"
    workdir.mkdir()
    shim = any("Composite" in str(step[1]) for _, step in steps)  # array.tostring (see runner)
    writer = Served(samples_dir, workdir, W, readonly=False, shim_array=shim)
    try:
        assert writer.alive, writer.finish()["failure"]
        reader = Served(samples_dir, workdir, R, readonly=True, shim_array=shim)
        try:
            assert reader.alive, reader.finish()["failure"]
            procs = {W: writer, R: reader}
            for who, step in steps:
                if not procs[who].step(step):
                    break
            result = merged(writer.finish(), reader.finish())
        finally:
            reader.kill()
    finally:
        writer.kill()
    check(result)


def test_sample_xml_opens_read_only_beside_its_writer(samples_dir: Path, tmp_path: Path) -> None:
    """``from_config(readonly=True)`` opens the writer's topics; the view (a transient
    topic) is the reader's own, computed from the records it reads."""
    config = samples_dir / "sample.xml"
    writer = SowStore.from_config(config, base_dir=tmp_path)
    try:
        order = {"orderId": 1, "customer": "ann", "quantity": 2, "price": 3.5}
        writer.topic("orders").publish(order)
        reader = SowStore.from_config(config, base_dir=tmp_path, readonly=True)
        try:
            assert reader.readonly
            assert isinstance(reader.journal, FollowedJournal)  # the writer's, read-only
            assert writer.journal is not None
            assert reader.journal.directory == writer.journal.directory
            assert sorted((t.name, t.message_type) for t in reader.topics()) == sorted(
                (t.name, t.message_type) for t in writer.topics()
            )
            totals = [json.loads(r.data) for r in reader.topic("customer-order-totals").sow()]
            assert totals == [{"total": 7.0, "customer": "ann"}]
        finally:
            reader.close()
    finally:
        writer.close()


CONFIG = """<AMPSConfig><SOW>
  <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key>
    <FileName>./sow/%n.sow</FileName></Topic>
  <View><Name>totals</Name><UnderlyingTopic>orders</UnderlyingTopic>
    <MessageType>json</MessageType>
    <Projection><Field>SUM(/qty) AS /qty</Field><Field>/who AS /who</Field></Projection>
    <Grouping><Field>/who</Field></Grouping></View>
</SOW></AMPSConfig>"""


def test_a_read_only_client_sow_answers_with_the_writers_current_state(tmp_path: Path) -> None:
    """A ``sow`` over a read-only store sees what the writer published after the open,
    the view included; the read-only store still refuses a stored topic of its own."""
    import sowlib.compat as amps
    from sowlib.errors import ReadOnlyError

    writer = SowStore.from_config(CONFIG.encode(), base_dir=tmp_path)
    reader = SowStore.from_config(CONFIG.encode(), base_dir=tmp_path, readonly=True)
    uri = "tcp://127.0.0.1:9311/amps/json"
    amps.attach(reader, uri)
    client = amps.Client("read-only-sow")
    try:
        writer.topic("orders").publish({"id": 1, "who": "ann", "qty": 2})
        writer.topic("orders").publish({"id": 2, "who": "ann", "qty": 3})
        client.connect(uri)
        client.logon()
        got = [m.get_data() for m in _messages(client.sow("orders")) if m.get_command() == "sow"]
        assert sorted(json.loads(d)["id"] for d in got) == [1, 2]
        totals = [m.get_data() for m in _messages(client.sow("totals")) if m.get_command() == "sow"]
        assert [json.loads(d) for d in totals] == [{"qty": 5, "who": "ann"}]
        with pytest.raises(ReadOnlyError):
            reader.create_topic("more", keys=["/id"])
        assert [t.name for t in reader.topics()].count("more") == 0
    finally:
        client.close()
        amps.detach(uri)
        reader.close()
        writer.close()
