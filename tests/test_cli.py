"""The ``sowlib`` command: every subcommand, exit statuses, damage detection and repair."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sowlib.cli import main
from sowlib.storage import AppendLog
from sowlib.store import SowStore, topic_file_name

ORDERS = [{"id": i, "price": 10 * i, "region": "EU" if i % 2 else "US"} for i in range(1, 7)]


def run(*argv: str) -> tuple[int, str]:
    """Run the command in process; returns (status, stdout text)."""
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A closed store with six orders in ``orders`` (json) and two in ``raw`` (binary)."""
    path = tmp_path / "store"
    with SowStore(path) as store:
        orders = store.create_topic("orders", keys=["/id"])
        for order in ORDERS:
            orders.publish(order)
        raw = store.create_topic("raw", message_type="binary")
        raw.publish(b"alpha", sow_key="a")
        raw.publish(b"beta", sow_key="b")
    return path


def orders_file(store_path: Path) -> Path:
    return store_path / topic_file_name("orders", "json")


def record_offsets(path: Path) -> list[tuple[int, bytes]]:
    """(offset, payload) of every record in a log file, in file order."""
    with AppendLog(str(path), readonly=True) as log:
        return [(rec.offset, rec.payload) for rec in log.scan()]


def corrupt_middle_record(path: Path) -> int:
    """Flip bytes inside the payload of the third record (three follow it); returns its offset."""
    records = record_offsets(path)
    assert len(records) >= 4
    offset, payload = records[2]
    data = bytearray(path.read_bytes())
    at = data.index(payload, offset)
    data[at + 1] ^= 0x20  # keep the record length; only the checksum can tell
    data[at + 2] ^= 0x20
    path.write_bytes(bytes(data))
    return offset


def stored(store_path: Path, topic: str = "orders") -> dict[str, bytes]:
    with SowStore(store_path, readonly=True) as store:
        return {rec.sow_key: rec.data for rec in store.topic(topic).sow()}


# ---------------------------------------------------------------------------- verify


def test_verify_reports_every_file_ok(store_path: Path) -> None:
    status, text = run("verify", str(store_path))
    assert status == 0
    lines = text.splitlines()
    assert len(lines) == 2
    assert all(": ok " in line for line in lines)
    assert any("records=6" in line for line in lines)
    assert any("records=2" in line for line in lines)


def test_verify_a_single_file(store_path: Path) -> None:
    status, text = run("verify", str(orders_file(store_path)))
    assert status == 0
    assert text.startswith(str(orders_file(store_path)))
    assert "last_seq=6" in text


def test_verify_of_a_directory_without_logs_exits_1(tmp_path: Path) -> None:
    status, _ = run("verify", str(tmp_path))
    assert status == 1


def test_verify_names_the_offset_of_a_corrupt_middle_record(store_path: Path) -> None:
    offset = corrupt_middle_record(orders_file(store_path))
    status, text = run("verify", str(store_path))
    assert status == 1
    line = next(line for line in text.splitlines() if "orders" in line)
    assert "CORRUPT" in line
    assert f"corrupt_offsets=[{offset}]" in line
    assert "records=5" in line


def test_verify_repair_salvages_every_intact_record_and_the_store_opens(
    store_path: Path,
) -> None:
    path = orders_file(store_path)
    before = stored(store_path)
    damaged_payload = record_offsets(path)[2][1]
    corrupt_middle_record(path)
    status, text = run("verify", "--repair", str(store_path))
    assert status == 0
    assert "repaired" in text
    status, text = run("verify", str(store_path))
    assert status == 0, text
    after = stored(store_path)
    lost = {k for k, v in before.items() if v == damaged_payload}
    assert len(lost) == 1
    assert after == {k: v for k, v in before.items() if k not in lost}
    with SowStore(store_path) as store:  # a writer opens it too, and can publish
        orders = store.topic("orders")
        orders.publish(ORDERS[2])
        assert len(orders) == 6


# ---------------------------------------------------------------------------- dump


def test_dump_prints_a_header_and_one_line_per_record(store_path: Path) -> None:
    status, text = run("dump", str(orders_file(store_path)))
    assert status == 0
    lines = text.splitlines()
    assert lines[0].startswith("# file ")
    body = lines[1:]
    assert len(body) == 6
    offsets = [off for off, _ in record_offsets(orders_file(store_path))]
    for line, offset, seq in zip(body, offsets, range(1, 7), strict=True):
        assert f"offset={offset}" in line
        assert f"seq={seq}" in line
        assert "kind=PUT" in line


def test_dump_limit(store_path: Path) -> None:
    status, text = run("dump", "-n", "2", str(orders_file(store_path)))
    assert status == 0
    assert len(text.splitlines()) == 3


def test_dump_verbose_shows_payloads(store_path: Path) -> None:
    status, text = run("dump", "-v", str(orders_file(store_path)))
    assert status == 0
    payload_lines = [line.strip() for line in text.splitlines() if line.startswith("  ")]
    assert [json.loads(p) for p in payload_lines] == ORDERS


def test_dump_data_only_with_a_delimiter(store_path: Path) -> None:
    status, text = run("dump", "--data-only", "-d", "|", str(orders_file(store_path)))
    assert status == 0
    parts = text.split("|")
    assert parts[-1] == ""
    assert [json.loads(p) for p in parts[:-1]] == ORDERS


def test_dump_data_only_defaults_to_newlines(store_path: Path) -> None:
    status, text = run("dump", "--data-only", str(store_path / topic_file_name("raw", "binary")))
    assert status == 0
    assert text == "alpha\nbeta\n"


# ---------------------------------------------------------------------------- stats


def test_stats_prints_json_per_topic(store_path: Path) -> None:
    status, text = run("stats", str(store_path))
    assert status == 0
    stats = json.loads(text)
    assert stats["orders (json)"]["records"] == 6
    assert stats["raw (binary)"]["records"] == 2


# ---------------------------------------------------------------------------- query


def test_query_with_filter_order_and_paging(store_path: Path) -> None:
    status, text = run(
        "query",
        str(store_path),
        "orders",
        "/price >= 20",
        "--order-by",
        "/price DESC",
        "--top-n",
        "2",
        "--skip-n",
        "1",
    )
    assert status == 0
    assert [json.loads(line)["id"] for line in text.splitlines()] == [5, 4]


def test_query_without_a_filter_prints_everything(store_path: Path) -> None:
    status, text = run("query", str(store_path), "orders", "--order-by", "/id")
    assert status == 0
    assert [json.loads(line) for line in text.splitlines()] == ORDERS


def test_query_by_message_type(store_path: Path) -> None:
    status, text = run("query", str(store_path), "raw", "--message-type", "binary")
    assert status == 0
    assert sorted(text.splitlines()) == ["alpha", "beta"]


# ---------------------------------------------------------------------------- publish


def test_publish_from_arguments(store_path: Path) -> None:
    status, text = run(
        "publish", str(store_path), "orders", '{"id": 7, "price": 1}', '{"id": 1, "price": 2}'
    )
    assert status == 0
    lines = text.splitlines()
    assert len(lines) == 2
    assert "seq=7 inserted=True" in lines[0]
    assert "seq=8 inserted=False" in lines[1]
    data = stored(store_path)
    assert len(data) == 7
    assert {"id": 1, "price": 2} in [json.loads(v) for v in data.values()]


def test_publish_from_stdin_skips_blank_lines(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"id": 8}\n\n{"id": 9}\n'))
    status, text = run("publish", str(store_path), "orders")
    assert status == 0
    assert len(text.splitlines()) == 2
    assert len(stored(store_path)) == 8


# ---------------------------------------------------------------------------- compact


def test_compact_shrinks_a_topic_with_garbage(store_path: Path) -> None:
    with SowStore(store_path) as store:
        orders = store.create_topic("orders", keys=["/id"])
        for n in range(50):
            orders.publish({"id": 1, "price": n})
    before = stored(store_path)
    status, text = run("compact", str(store_path), "--topic", "orders")
    assert status == 0
    lines = text.splitlines()
    assert len(lines) == 1
    sizes = lines[0].split(": ")[1].split(" ")
    assert int(sizes[2]) < int(sizes[0])
    assert stored(store_path) == before


def test_compact_every_topic(store_path: Path) -> None:
    status, text = run("compact", str(store_path))
    assert status == 0
    assert len(text.splitlines()) == 2


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["query", "{dir}", "nope"], id="unknown-topic-query"),
        pytest.param(["publish", "{dir}", "nope", '{"id": 1}'], id="unknown-topic-publish"),
        pytest.param(["query", "{dir}", "orders", "/price = = 1"], id="bad-filter"),
        pytest.param(["query", "{dir}", "orders", "NOPE(/a) = 1"], id="unknown-function"),
        pytest.param(["query", "{dir}", "orders", "--top-n", "-1"], id="bad-top-n"),
        pytest.param(["publish", "{dir}", "orders", '{"id": '], id="malformed-message"),
        pytest.param(["publish", "{dir}", "orders", '{"x": 1}'], id="missing-key-field"),
        pytest.param(["stats", "{missing}"], id="missing-directory-stats"),
        pytest.param(["query", "{missing}", "orders"], id="missing-directory-query"),
        pytest.param(["dump", "{missing}/x.sow"], id="missing-file-dump"),
    ],
)
def test_errors_exit_2_with_one_line_on_stderr(
    argv: list[str], store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stored(store_path)
    args = [
        a.replace("{dir}", str(store_path)).replace("{missing}", str(tmp_path / "missing"))
        for a in argv
    ]
    status, text = run(*args)
    assert status == 2
    assert text == ""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"sowlib {args[0]}: ")
    assert stored(store_path) == before
    assert not (tmp_path / "missing").exists() or argv[0] == "publish"


def test_error_names_the_exception_class(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("query", str(store_path), "nope")[0] == 2
    assert "UnknownTopicError" in capsys.readouterr().err


def test_opening_a_corrupt_store_exits_2(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = orders_file(store_path)
    os.unlink(f"{path}.ckpt")  # as after a crash: no clean-close checkpoint to trust
    corrupt_middle_record(path)
    status, _ = run("query", str(store_path), "orders")
    assert status == 2
    assert "CorruptRecordError" in capsys.readouterr().err


# ---------------------------------------------------------------------------- subprocess


@pytest.mark.slow
def test_python_dash_m_sowlib(store_path: Path) -> None:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "sowlib", "query", str(store_path), "orders", "/id = 3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ORDERS[2]
    failed = subprocess.run(
        [sys.executable, "-m", "sowlib", "query", str(store_path), "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert failed.returncode == 2
    assert failed.stdout == ""
    assert len(failed.stderr.splitlines()) == 1
