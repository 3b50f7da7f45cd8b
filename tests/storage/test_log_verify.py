"""verify(): reporting damage, and salvaging every intact record with repair=True."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib.errors import CorruptRecordError, FormatVersionError, StoreLockedError
from sowlib.storage import AppendLog, verify

from .conftest import open_log, put, replay, uncommit
from .test_log_crash import _fill, _flip


def test_clean_file_verifies(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    report = verify(path)
    assert report.ok
    assert not report.repaired
    assert report.backup_path is None
    assert (report.records, report.last_seq, report.corrupt_offsets) == (len(recs), 6, ())
    assert report.torn_tail_bytes == 0


def test_torn_tail_is_reported_but_ok(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    with AppendLog(path, readonly=True) as log:
        end = log.end_offset
    _flip(path, end - 1)
    uncommit(path, recs[-1].offset)  # a crash image: the last record was never committed
    report = verify(path, repair=True)
    assert report.ok
    assert not report.repaired
    assert report.records == len(recs) - 1
    assert report.torn_tail_bytes > 0
    assert report.open_error_offset is None


def test_issue16_verify_calls_a_damaged_committed_last_record_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    with AppendLog(path, readonly=True) as log:
        end = log.end_offset
    _flip(path, end - 1)  # the checksum of the last record of a cleanly closed log
    report = verify(path)
    assert not report.ok
    assert report.corrupt_offsets == (recs[-1].offset,)
    assert report.open_error_offset == recs[-1].offset
    assert report.committed_end == end
    with pytest.raises(CorruptRecordError) as info:
        AppendLog(path)
    assert info.value.offset == recs[-1].offset


def test_repair_salvages_every_intact_record(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path, 10)
    _flip(path, recs[3].offset + 60)
    _flip(path, recs[7].offset + 60)
    original = path.read_bytes()
    report = verify(path)
    assert not report.ok
    assert report.corrupt_offsets == (recs[3].offset, recs[7].offset)
    assert report.records == 8
    assert path.read_bytes() == original
    with pytest.raises(CorruptRecordError):
        AppendLog(path)
    repaired = verify(path, repair=True)
    assert repaired.repaired
    assert repaired.backup_path == str(path) + ".corrupt"
    assert Path(repaired.backup_path).read_bytes() == original
    log = open_log(path)
    kept = [r for i, r in enumerate(recs) if i not in (3, 7)]
    assert [(r.key, r.seq, r.payload) for r in log.scan()] == [
        (r.key, r.seq, r.payload) for r in kept
    ]
    assert log.generation == 1
    assert log.last_seq == 10
    log.check()
    assert put(log, "after", b"repair").seq == 11
    log.close()
    assert verify(path).ok
    assert replay(open_log(path).scan())["after"] == b"repair"


def test_repair_refuses_while_a_writer_has_the_log(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    writer = open_log(path)
    _flip(path, recs[2].offset + 60)  # damaged under a live writer
    try:
        assert not verify(path).ok
        with pytest.raises(StoreLockedError):
            verify(path, repair=True)
    finally:
        writer.close()
    assert not Path(str(path) + ".corrupt").exists()
    assert verify(path, repair=True).repaired


def test_verify_of_a_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    path.write_bytes(b"PK\x03\x04 zip, not a log")
    with pytest.raises(FormatVersionError):
        verify(path)
    path.write_bytes(b"")
    with pytest.raises(FormatVersionError):
        verify(path)
