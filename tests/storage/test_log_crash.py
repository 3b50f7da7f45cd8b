"""Crash tests: torn tails at every byte, flipped bytes, a SIGKILLed writer, crashed compactions."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sowlib
from sowlib.errors import CorruptRecordError
from sowlib.storage import AppendLog, FileSystem, LogRecord, RecordKind
from sowlib.storage.format import RECORD_HEADER_SIZE

from .conftest import open_log, put, replay, uncommit

ROOT = str(Path(sowlib.__file__).resolve().parent.parent)


def _fill(path: Path, n: int = 6) -> list[LogRecord]:
    log = open_log(path)
    recs = [put(log, f"key{i}", f"payload number {i}".encode() * 3) for i in range(n)]
    log.close()
    return recs


def _length(rec: LogRecord, log_end: int, recs: list[LogRecord]) -> int:
    later = [r.offset for r in recs if r.offset > rec.offset]
    return (min(later) if later else log_end) - rec.offset


def _damage(path: Path, offset: int, new: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(new)


def _flip(path: Path, offset: int) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0xFF]))


@pytest.mark.slow
def test_torn_tail_is_truncated_on_open_at_every_cut(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine.log"
    recs = _fill(pristine)
    with AppendLog(pristine, readonly=True) as reader:
        end = reader.end_offset
    last = recs[-1]
    length = end - last.offset
    expected = replay(recs[:-1])
    for cut in range(length):
        path = tmp_path / f"cut{cut}.log"
        shutil.copyfile(pristine, path)
        _damage(path, last.offset + cut, bytes(length - cut))  # the bytes never written
        uncommit(path, last.offset)  # killed before the last record was committed
        before = path.read_bytes()
        reader = AppendLog(path, readonly=True)  # a reader sees the prefix, changes nothing
        assert replay(reader.scan()) == expected
        assert reader.end_offset == last.offset
        reader.close()
        assert path.read_bytes() == before
        log = open_log(path)
        assert replay(log.scan()) == expected
        assert log.end_offset == last.offset
        assert log.last_seq == last.seq - 1
        assert 0 < log.report.truncated_bytes <= cut if cut else log.report.truncated_bytes == 0
        log.check()
        new = put(log, "after", b"survives")
        log.close()
        again = open_log(path)
        assert list(again.scan())[-1] == new
        assert replay(again.scan()) == {**expected, "after": b"survives"}
        again.check()
        again.close()


@pytest.mark.parametrize(
    ("field", "delta"),
    [
        ("length", 0),
        ("marker", 4),
        ("kind", 5),
        ("key_len", 6),
        ("payload_len", 8),
        ("seq", 12),
        ("key", RECORD_HEADER_SIZE),
        ("payload", -20),
        ("checksum", -1),
    ],
)
def test_damaged_middle_record_is_corruption(tmp_path: Path, field: str, delta: int) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    victim = recs[2]
    end = recs[3].offset
    _flip(path, (end if delta < 0 else victim.offset) + delta)
    for readonly in (True, False):
        with pytest.raises(CorruptRecordError) as info:
            AppendLog(path, readonly=readonly)
        assert info.value.offset == victim.offset, field


def test_zeroed_middle_record_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    _damage(path, recs[1].offset, bytes(recs[2].offset - recs[1].offset))
    with pytest.raises(CorruptRecordError) as info:
        AppendLog(path)
    assert info.value.offset == recs[1].offset


@pytest.mark.parametrize("delta", [0, 3, 4, 5, 12, RECORD_HEADER_SIZE, -9, -1])
def test_damaged_uncommitted_last_record_is_a_torn_tail(tmp_path: Path, delta: int) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    with AppendLog(path, readonly=True) as reader:
        end = reader.end_offset
    _flip(path, (end if delta < 0 else recs[-1].offset) + delta)
    uncommit(path, recs[-1].offset)  # a crash image: the last record is past the commit
    log = open_log(path)
    assert log.report.truncated_bytes > 0
    assert list(log.scan()) == recs[:-1]
    log.check()
    put(log, "new", b"x")
    log.close()
    assert replay(open_log(path).scan())["new"] == b"x"


def test_garbage_appended_after_the_slab_is_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    with path.open("ab") as fh:
        fh.write(b"\x40\x00\x00\x00\xf5\x01partial")
    size = path.stat().st_size
    log = open_log(path)
    # the span from the last good boundary to the last non-zero byte is cut
    assert log.report.truncated_bytes == size - log.end_offset
    assert log.end_offset == recs[-1].offset + (recs[-1].offset - recs[-2].offset)
    assert list(log.scan()) == recs
    log.check()


WRITER = textwrap.dedent(
    """
    import sys
    from sowlib.storage import AppendLog, RecordKind
    log = AppendLog(sys.argv[1], meta=b"{}", slab_size=4096)
    i = 0
    while True:
        rec = log.append(RecordKind.PUT, f"k{i % 50}", b"x" * (i % 300), timestamp=float(i))
        print(rec.seq, flush=True)
        i += 1
    """
)


def _python(script: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", script, *args], env=env, text=True, **kwargs
    )


@pytest.mark.slow
def test_sigkilled_writer_loses_no_acknowledged_append(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    proc = _python(WRITER, str(path), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    printed = []
    for line in proc.stdout:
        printed.append(int(line))
        if len(printed) == 3000:
            proc.send_signal(signal.SIGKILL)
            break
    printed.extend(int(line) for line in proc.stdout)  # acknowledged before the kill
    proc.stdout.close()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    log = open_log(path)
    seqs = [rec.seq for rec in log.scan()]
    assert seqs == list(range(1, len(seqs) + 1))  # a prefix, in order
    assert set(printed) <= set(seqs)
    log.check()
    new = put(log, "after", b"kill")
    log.close()
    assert list(open_log(path).scan())[-1] == new


COMPACTOR = textwrap.dedent(
    """
    import os, sys
    from sowlib.storage import AppendLog, FileSystem

    class Crash(FileSystem):
        def fsync(self, fd):
            if sys.argv[2] == "fsync":
                os._exit(3)
            super().fsync(fd)

        def rename(self, src, dst):
            if sys.argv[2] == "rename":
                os._exit(3)
            super().rename(src, dst)

        def fsync_dir(self, directory):
            if sys.argv[2] == "fsync_dir":
                os._exit(3)
            super().fsync_dir(directory)

    log = AppendLog(sys.argv[1], fs=Crash(), slab_size=4096)
    log.compact(lambda rec: rec.seq % 2 == 1)
    os._exit(3)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "compacted"), [("fsync", False), ("rename", False), ("fsync_dir", True), ("end", True)]
)
def test_crash_between_compaction_steps(tmp_path: Path, step: str, compacted: bool) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path, 40)
    proc = _python(COMPACTOR, str(path), step, stderr=subprocess.PIPE)
    _, err = proc.communicate()
    assert proc.returncode == 3, err
    expected = [r for r in recs if r.seq % 2 == 1] if compacted else recs
    log = open_log(path)
    assert [(r.key, r.seq, r.payload) for r in log.scan()] == [
        (r.key, r.seq, r.payload) for r in expected
    ]
    assert log.generation == int(compacted)
    assert not Path(str(path) + ".compact.tmp").exists()
    log.check()
    new = put(log, "after", b"crash")
    assert new.seq == 41
    log.close()
    assert list(open_log(path).scan())[-1] == new


class Failing(FileSystem):
    """Raises OSError at one named step."""

    def __init__(self, step: str) -> None:
        super().__init__()
        self.step = step

    def fsync(self, fd: int) -> None:
        if self.step == "fsync":
            raise OSError("injected fsync failure")
        super().fsync(fd)

    def rename(self, src: str, dst: str) -> None:
        if self.step == "rename":
            raise OSError("injected rename failure")
        super().rename(src, dst)

    def fsync_dir(self, directory: str) -> None:
        if self.step == "fsync_dir":
            raise OSError("injected directory fsync failure")
        super().fsync_dir(directory)


@pytest.mark.parametrize("step", ["fsync", "rename"])
def test_failed_compaction_leaves_the_log_unchanged(tmp_path: Path, step: str) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    fs = Failing("")
    log = open_log(path, fs=fs)
    fs.step = step
    with pytest.raises(OSError, match="injected"):
        log.compact(lambda rec: False)
    fs.step = ""
    assert list(log.scan()) == recs
    assert log.generation == 0
    assert not Path(str(path) + ".compact.tmp").exists()
    log.check()
    put(log, "more", b"x")
    log.close()
    assert len(list(open_log(path).scan())) == len(recs) + 1


def test_compaction_failing_after_the_rename_switches_files(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    _fill(path)
    fs = Failing("fsync_dir")
    log = open_log(path, fs=fs)
    with pytest.raises(OSError, match="injected"):
        log.compact(lambda rec: rec.key == "key0")
    fs.step = ""
    assert log.generation == 1
    assert [r.key for r in log.scan()] == ["key0"]
    log.check()
    put(log, "more", b"x")
    log.close()
    assert [r.key for r in open_log(path).scan()] == ["key0", "more"]


def test_failing_keep_leaves_the_log_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    log = open_log(path)

    def keep(rec: LogRecord) -> bool:
        raise RuntimeError("caller bug")

    with pytest.raises(RuntimeError):
        log.compact(keep)
    assert list(log.scan()) == recs
    assert not Path(str(path) + ".compact.tmp").exists()


def test_leftover_temp_files_are_removed_by_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    _fill(path)
    for suffix in (".compact.tmp", ".ckpt.tmp"):
        Path(str(path) + suffix).write_bytes(b"half written")
    AppendLog(path, readonly=True).close()
    assert Path(str(path) + ".compact.tmp").exists()
    open_log(path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.log"]


@pytest.mark.parametrize("kind", [RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE])
def test_every_kind_survives_reopen(tmp_path: Path, kind: RecordKind) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    rec = log.append(kind, "k", b"p", timestamp=5.0, expiration=6.0, correlation_id=b"id")
    log.close()
    assert list(open_log(path).scan()) == [rec]
