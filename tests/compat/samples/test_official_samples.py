"""The official AMPS Python client's ``samples/`` run unmodified against ``sample.xml``.

Each publisher/subscriber pair runs in one process (``runner.py``), over the store
``SowStore.from_config("sample.xml")`` builds, with ``AMPS`` being
``sowlib.compat``; subscribers loop forever on their own thread and the test
asserts on what each program printed. Nothing in the samples is edited; only
the composite pair gets ``array.array.tostring``/``fromstring`` back (removed
from Python in 3.9). ``sample.xml`` loads whole, its ``<Queue>`` included.

The two-process form (the subscriber's store opened read-only in another process)
is ``test_samples_two_processes.py``.
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

ROOT = Path(__file__).resolve().parents[3]
RUNNER = Path(__file__).with_name("runner.py")
URI = "tcp://127.0.0.1:9027/amps/json"

Result = dict[str, Any]


def run(samples: Path, tmp_path: Path, steps: list[list[Any]], **options: Any) -> Result:
    scenario = {
        "samples": str(samples),
        "config": str(samples / "sample.xml"),
        "result": str(tmp_path / "result.json"),
        "steps": steps,
        **options,
    }
    spec = tmp_path / "scenario.json"
    spec.write_text(json.dumps(scenario))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(spec)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    result: Result = json.loads((tmp_path / "result.json").read_text())
    return result


def out(result: Result, name: str) -> list[str]:
    return str(result["stdout"].get(name, "")).splitlines()


def err(result: Result, name: str) -> str:
    return str(result["stderr"].get(name, ""))


def clean(result: Result) -> None:
    """No step failed, no sample raised, no sample wrote to stderr."""
    assert result["failure"] == ""
    assert result["errors"] == {}
    assert not any(result["stderr"].values()), result["stderr"]


def subscribe_then_publish(sub: str, pub: str, text: str, count: int) -> list[list[Any]]:
    return [["start", sub], ["blocked", sub], ["run", pub], ["output", sub, text, count]]


SOW_PUB = "AMPSSOWConsolePublisher.py"


def sow_rows(lines: list[str], prefix: str = "") -> dict[int, str]:
    rows = {}
    for line in lines:
        if "messageNumber" in line:
            body = line.removeprefix(prefix)
            doc = json.loads(body[2:-1] if body.startswith("b'") else body)
            rows[doc["messageNumber"]] = doc["text"]
    return rows


def check_console(r: Result) -> None:
    clean(r)
    assert out(r, "AMPSConsoleSubscriber.py") == ['{ "hi" : "Hello, world!"}']


def check_fix(r: Result) -> None:
    clean(r)
    assert out(r, "AMPSFIXBuilderPublisher.py") == ["0=data\x011=more data\x012=123\x01"]
    assert out(r, "AMPSFIXShredderSubscriber.py") == ["0 data", "1 more data", "2 123"]


def check_nvfix(r: Result) -> None:
    # sample.xml keys the nvfix messages-sow topic on /messageNumber, which the sample's
    # message lacks: the publish is rejected (spec: a message without a key field is not
    # processed) and the sample prints the error from its own except clause.
    assert r["failure"] == ""
    assert r["errors"] == {}
    assert out(r, "AMPSNVFIXBuilderPublisher.py") == ["sample=data\x01even=more data\x011=123\x01"]
    assert "no value for key field '/messageNumber'" in err(r, "AMPSNVFIXBuilderPublisher.py")
    assert out(r, "AMPSNVFIXShredderSubscriber.py") == []


def check_sow(r: Result) -> None:
    clean(r)
    lines = out(r, "AMPSSOWConsoleSubscriber.py")
    assert lines[0] == "Receiving messages from the SOW."
    assert lines[-1] == "Done receiving messages from the SOW."
    rows = sow_rows(lines)
    assert len(lines) == 12
    assert sorted(rows) == list(range(10))
    assert rows[5] == "This is new information"
    assert rows[4] == "Hello, world!"


def check_sow_and_subscribe(r: Result) -> None:
    clean(r)
    lines = out(r, "AMPSSOWandSubscribeConsoleSubscriber.py")
    end = lines.index("Done receiving messages from the SOW.")
    assert lines[0] == "Receiving messages from the SOW."
    assert end == 11
    assert all(line.startswith("(sow) : ") for line in lines[1:end])
    assert sorted(sow_rows(lines[1:end], "(sow) : ")) == list(range(10))
    live = lines[end + 1 :]
    assert all(line.startswith("(publish) : ") for line in live)
    numbers = [json.loads(line[len("(publish) : b'") : -1])["messageNumber"] for line in live]
    assert numbers == [*range(10), 5]  # the second run: 0..9, then the update of 5


def check_oof(r: Result) -> None:
    clean(r)
    lines = out(r, "AMPSSOWandSubscribeWithOOF.py")
    end = lines.index("Done receiving messages from the SOW.")
    assert sorted(sow_rows(lines[1:end])) == list(range(0, 100, 10))
    reasons = [line.strip().split(" : ")[0] for line in lines if line.startswith("   ")]
    assert reasons.count("match") == 8  # 0, 1250 ... 8750 updated with ignore_me
    assert reasons.count("deleted") == 1
    assert reasons.count("expired") == 1
    assert any(line.startswith("   expired : ") and "50000" in line for line in lines)
    assert any(line.startswith("   deleted : ") and ":500," in line for line in lines)


def check_replay(r: Result) -> None:
    clean(r)
    lines = out(r, "AMPSSubscribeForReplay.py")
    ids = [int(line.split("=")[1].split()[0]) for line in lines]
    # the second run resumes after what the first discarded (MMapBookmarkStore)
    assert ids == list(range(1, 21))


def series() -> list[float]:
    data = [1.0, 1.0]
    for d in range(2, 50):
        data.append(float(d + data[d - 2]))
    return data


def check_composite(r: Result) -> None:
    clean(r)
    lines = out(r, "CompositeMessageSubscriber.py")
    assert lines[0::3] == ["Received message with 2 parts."] * 3
    assert [json.loads(line)["number"] for line in lines[1::3]] == [3, 6, 9]
    expected = "".join(f"{d:f} " for d in series())
    assert lines[2::3] == [expected.rstrip()] * 3 or lines[2::3] == [expected] * 3


def check_chooser(r: Result) -> None:
    clean(r)
    assert out(r, "RandomServerChooser.py") == [
        '{"messageNumber": 7, "via": "RandomServerChooser"}'
    ]


def check_queue(r: Result) -> None:
    assert r["note"] == ""  # sample.xml loaded with its <Queue>
    clean(r)
    lines = out(r, "AMPSQueueConsumer.py")
    got = sorted(int(line.rsplit(" ", 1)[1].rstrip('"}')) for line in lines)
    assert got == list(range(1000))  # each message once, published before the consumer


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
        [
            ["start", "AMPSNVFIXShredderSubscriber.py"],
            ["blocked", "AMPSNVFIXShredderSubscriber.py"],
            ["run", "AMPSNVFIXBuilderPublisher.py"],
            ["blocked", "AMPSNVFIXShredderSubscriber.py"],
        ],
        check_nvfix,
        id="nvfix",
    ),
    pytest.param([["run", SOW_PUB], ["run", "AMPSSOWConsoleSubscriber.py"]], check_sow, id="sow"),
    pytest.param(
        [
            ["run", SOW_PUB],
            ["start", "AMPSSOWandSubscribeConsoleSubscriber.py"],
            ["output", "AMPSSOWandSubscribeConsoleSubscriber.py", "Done receiving", 1],
            ["blocked", "AMPSSOWandSubscribeConsoleSubscriber.py"],
            ["run", SOW_PUB],
            ["output", "AMPSSOWandSubscribeConsoleSubscriber.py", "new information", 2],
        ],
        check_sow_and_subscribe,
        id="sow-and-subscribe",
    ),
    pytest.param(
        [
            ["run", SOW_PUB],
            ["start", "AMPSSOWandSubscribeWithOOF.py"],
            ["output", "AMPSSOWandSubscribeWithOOF.py", "Done receiving", 1],
            ["blocked", "AMPSSOWandSubscribeWithOOF.py"],
            ["run", "AMPSUpdateForOOF.py"],
            ["output", "AMPSSOWandSubscribeWithOOF.py", "expired", 1],
        ],
        check_oof,
        id="oof",
    ),
    pytest.param(
        [
            ["start", "AMPSPublishForReplay.py"],
            ["output", "AMPSPublishForReplay.py", "Published 30", 1],
            ["run", "AMPSSubscribeForReplay.py"],
            ["run", "AMPSSubscribeForReplay.py"],
        ],
        check_replay,
        id="replay",
    ),
    pytest.param(
        subscribe_then_publish(
            "CompositeMessageSubscriber.py", "CompositeMessagePublisher.py", "parts", 3
        ),
        check_composite,
        id="composite",
    ),
    pytest.param(
        [["chooser", "RandomServerChooser.py", URI]],
        check_chooser,
        id="random-server-chooser",
    ),
    pytest.param(
        [
            ["run", "AMPSQueuePublisher.py"],
            ["start", "AMPSQueueConsumer.py"],
            ["output", "AMPSQueueConsumer.py", "Hello", 1000],
        ],
        check_queue,
        id="queue",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("steps", "check"), CASES)
def test_sample_pair_in_one_process(
    samples_dir: Path,
    tmp_path: Path,
    steps: list[list[Any]],
    check: Callable[[Result], None],
) -> None:
    composite = any("Composite" in str(step[1]) for step in steps)
    queues = any("Queue" in str(step[1]) for step in steps)
    result = run(samples_dir, tmp_path, steps, shim_array=composite, queues=queues)
    check(result)


def test_the_samples_are_the_vendors_files(samples_dir: Path) -> None:
    """The fixture fetched the real samples: 18 programs and the configuration."""
    programs = sorted(p.name for p in samples_dir.glob("*.py"))
    assert len(programs) == 18
    assert (samples_dir / "sample.xml").is_file()
    assert "import AMPS" in (samples_dir / "AMPSConsolePublisher.py").read_text()
