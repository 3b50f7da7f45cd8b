"""Read-only openers following a live writer with refresh()."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sowlib.errors import ArgumentError
from sowlib.storage import AppendLog, LogRecord, RecordKind
from sowlib.storage.format import encode_record

from .conftest import put, replay

Factory = Callable[..., AppendLog]


def _new(log: AppendLog) -> list[LogRecord]:
    """What ``refresh`` found, as records."""
    got = log.refresh()
    assert got is not None
    return [log.read(off) for off in got.offsets]


def test_refresh_returns_exactly_the_new_records(new_log: Factory) -> None:
    writer = new_log()
    first = [put(writer, f"k{i}", b"v") for i in range(3)]
    reader = new_log(readonly=True)
    assert list(reader.scan()) == first
    assert _new(reader) == []
    batch = [put(writer, f"n{i}", b"x" * 300) for i in range(40)]  # crosses slabs
    got = _new(reader)
    assert got == batch
    assert _new(reader) == []
    assert reader.last_seq == writer.last_seq
    assert reader.end_offset == writer.end_offset
    assert list(reader.scan()) == first + batch
    reader.check()
    assert _new(writer) == []  # a writer sees its own appends


def test_refresh_never_returns_a_partial_record(new_log: Factory, log_path: Path) -> None:
    writer = new_log()
    put(writer, "a", b"1")
    reader = new_log(readonly=True)
    record = encode_record(RecordKind.PUT, b"b", b"", b"in flight", writer.last_seq + 1, 0, 0)
    end = writer.end_offset
    with log_path.open("r+b") as fh:  # the writer is half way through a record
        fh.seek(end)
        fh.write(record[: len(record) // 2])
    assert _new(reader) == []
    with log_path.open("r+b") as fh:
        fh.seek(end)
        fh.write(record)
    assert [r.key for r in _new(reader)] == ["b"]


def test_refresh_reports_compaction_and_a_reopen_agrees(new_log: Factory) -> None:
    writer = new_log()
    for i in range(20):
        put(writer, f"k{i % 4}", str(i).encode())
    writer.append(RecordKind.DELETE, "k0", b"", timestamp=1.0)
    reader = new_log(readonly=True)
    live = replay(reader.scan())
    latest = {rec.key: rec.offset for rec in writer.scan()}
    writer.compact(lambda rec: latest[rec.key] == rec.offset and rec.kind is RecordKind.PUT)
    assert reader.refresh() is None
    assert replay(reader.scan()) == live  # the old file is still readable until reopened
    again = new_log(readonly=True)
    assert again.generation == writer.generation == 1
    assert replay(again.scan()) == live == {"k1": b"17", "k2": b"18", "k3": b"19"}
    again.check()
    reader.adopt(again)  # or the old reader continues on the new file
    assert again.closed
    assert reader.generation == 1
    assert replay(reader.scan()) == live
    put(writer, "k9", b"after")
    assert [r.key for r in _new(reader)] == ["k9"]
    reader.check()


def test_adopt_takes_only_a_readonly_log_of_the_same_path(new_log: Factory) -> None:
    writer = new_log()
    put(writer, "a", b"1")
    reader = new_log(readonly=True)
    with pytest.raises(ArgumentError):
        reader.adopt(writer)
    with pytest.raises(ArgumentError):
        writer.adopt(reader)
    assert replay(reader.scan()) == {"a": b"1"}


def test_readonly_open_does_not_modify_a_torn_file(new_log: Factory, log_path: Path) -> None:
    writer = new_log()
    put(writer, "a", b"1")
    end = writer.end_offset
    writer.close()
    with log_path.open("r+b") as fh:
        fh.seek(end)
        fh.write(b"\x40\x00\x00\x00\xf5\x01")
    before = log_path.read_bytes()
    reader = new_log(readonly=True)
    assert reader.end_offset == end
    assert reader.report.truncated_bytes == 0
    reader.check()
    reader.close()
    assert log_path.read_bytes() == before
