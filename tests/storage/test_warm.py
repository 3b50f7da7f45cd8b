"""Populating a log's map in the background after an open (``sowlib.storage.warm``).

A populated log reads what an unpopulated one reads; closing, compacting, growing or
adopting while the warmer runs never raises, never leaves its thread running, never
touches a closed map; a kernel without the advice changes nothing for the user.
"""

from __future__ import annotations

import errno
import mmap
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sowlib.storage import AppendLog, LogRecord, RecordKind, warm
from sowlib.storage.native import PURE_PYTHON_ENV
from sowlib.storage.warm import Warmer, advise_python, load_native_advise

from .conftest import open_log, put

RECORDS = 600
PAYLOAD = 700  # ~0.45 MB of records: several pages, several 4 KiB slabs


def _warm_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sowlib-warm"]


def _settle() -> None:
    """Wait until no warmer runs (they populate a few hundred KB: quick)."""
    deadline = time.monotonic() + 60
    while _warm_threads() and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.fixture
def always_warm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Warm every map, however small (the default skips maps under 1 MiB)."""
    monkeypatch.setattr(warm, "MIN_BYTES", 1)
    yield
    _settle()


def _fill(path: Path, records: int = RECORDS) -> list[LogRecord]:
    with open_log(path) as log:
        return [
            put(log, f"k{i % 97}", bytes([65 + i % 26]) * (PAYLOAD + i % 13))
            for i in range(records)
        ]


def _mapped_rss(path: Path) -> int:
    """Resident bytes of this process's maps of ``path`` (/proc/self/smaps)."""
    total, mine = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            mine = line.endswith(str(path))
        elif mine and head[:1] == ["Rss:"]:
            total += int(head[1]) * 1024
    return total


def _unsupported() -> bool:
    """Whether this kernel lacks MADV_POPULATE_READ (the warmer then does nothing)."""
    with open("/proc/self/exe", "rb") as fh:
        mm = mmap.mmap(fh.fileno(), mmap.PAGESIZE, access=mmap.ACCESS_READ)
        try:
            return advise_python(mm, 0, mmap.PAGESIZE, warm.POPULATE_READ) != 0
        finally:
            mm.close()


@pytest.mark.usefixtures("always_warm")
@pytest.mark.parametrize("pure", [False, True], ids=["c-form", "mmap-form"])
@pytest.mark.parametrize("readonly", [False, True])
def test_a_populated_log_reads_what_an_unpopulated_one_reads(
    log_path: Path, monkeypatch: pytest.MonkeyPatch, readonly: bool, pure: bool
) -> None:
    if pure:
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")  # the warmer takes mmap.madvise
    written = _fill(log_path)
    with monkeypatch.context() as cold:
        cold.setattr(warm, "MIN_BYTES", 1 << 62)  # no warmer
        with open_log(log_path, readonly=readonly) as log:
            assert not _warm_threads()
            unpopulated = list(log.scan())
            reads = [log.read(rec.offset) for rec in written]
    with open_log(log_path, readonly=readonly) as log:
        assert list(log.scan()) == unpopulated  # while the warmer runs, most likely
        _settle()
        assert list(log.scan()) == unpopulated
        assert [log.read(rec.offset) for rec in written] == reads
        assert [log.read_put(rec.offset)[5] for rec in written] == [r.payload for r in written]
        log.check()
    assert [(r.key, r.payload, r.seq) for r in unpopulated] == [
        (r.key, r.payload, r.seq) for r in written
    ]


@pytest.mark.usefixtures("always_warm")
def test_the_open_populates_the_written_part_of_the_map(log_path: Path) -> None:
    if _unsupported():
        pytest.skip("the kernel has no MADV_POPULATE_READ")
    _fill(log_path)
    with open_log(log_path, readonly=True) as log:
        _settle()
        # the open read only the header and a few records past a checkpoint-less start,
        # the warmer the rest: every written page is in the map's page tables
        assert _mapped_rss(log_path) >= log.end_offset - mmap.PAGESIZE


@pytest.mark.usefixtures("always_warm")
def test_closing_while_the_warmer_runs_leaves_no_thread(log_path: Path) -> None:
    _fill(log_path)
    for i in range(60):
        log = open_log(log_path, readonly=bool(i % 2))
        if i % 3 == 0:
            log.read(log.header_len)
        log.close()
        assert not _warm_threads()  # close joined it
        log.close()  # idempotent


@pytest.mark.usefixtures("always_warm")
def test_readers_in_threads_open_and_close_while_a_writer_appends(log_path: Path) -> None:
    _fill(log_path)
    errors: list[BaseException] = []

    def reader_loop() -> None:
        try:
            for _ in range(25):
                with open_log(log_path, readonly=True) as log:
                    first = next(log.scan())
                    assert first.key == "k0"
                    log.refresh()  # may remap a grown file: the open's warmer stops
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader_loop) for _ in range(3)]
    for thread in threads:
        thread.start()
    with open_log(log_path) as writer:
        for i in range(300):
            put(writer, f"w{i}", b"x" * 500)  # grows the 4 KiB slabs: maps anew, warmer ends
    for thread in threads:
        thread.join()
    assert errors == []
    assert not _warm_threads()


@pytest.mark.usefixtures("always_warm")
def test_growth_and_compaction_during_a_warm_up(log_path: Path) -> None:
    written = _fill(log_path)
    with open_log(log_path) as log:
        put(log, "grow", b"g" * 3000)  # past the slab: a new map, the warmer of the old one ends
        log.compact(lambda rec: rec.key != "k0")  # closes the old map, warms the new one
        kept = [r for r in written if r.key != "k0"]
        assert [(r.key, r.payload) for r in log.scan()] == [
            *((r.key, r.payload) for r in kept),
            ("grow", b"g" * 3000),
        ]
    assert not _warm_threads()


@pytest.mark.usefixtures("always_warm")
def test_a_reader_adopting_the_compacted_file_takes_its_warmer(log_path: Path) -> None:
    _fill(log_path)
    writer = open_log(log_path)
    reader = open_log(log_path, readonly=True)
    writer.compact(lambda rec: rec.key != "k1")
    assert reader.refresh() is None
    again = open_log(log_path, readonly=True)
    reader.adopt(again)
    assert again.closed
    assert [r.key for r in reader.scan()] == [r.key for r in writer.scan()]
    again.close()
    reader.close()
    writer.close()
    assert not _warm_threads()


@pytest.mark.usefixtures("always_warm")
def test_an_abandoned_log_stops_its_warmer(log_path: Path) -> None:
    _fill(log_path)
    for _ in range(20):
        log: AppendLog | None = open_log(log_path)
        del log  # __del__ releases the flock: the next writer opens
    with open_log(log_path) as log:
        assert log.record_count == RECORDS
    _settle()
    assert not _warm_threads()


def test_a_kernel_without_the_advice_changes_nothing(
    log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _fill(log_path)
    monkeypatch.setattr(warm, "MIN_BYTES", 1)
    monkeypatch.setattr(warm, "POPULATE_READ", 0x7FFF)  # no kernel knows it: EINVAL
    with open_log(log_path) as log:
        put(log, "after", b"1")
        assert [r.payload for r in log.scan()][:-1] == [r.payload for r in written]
    assert not _warm_threads()


@pytest.mark.parametrize("form", ["native", "python"])
def test_the_warmer_forms_populate_or_report_and_never_change_bytes(
    tmp_path: Path, form: str
) -> None:
    native = load_native_advise()
    if form == "native" and native is None:
        pytest.skip("the C extension is not built")
    advise = native if form == "native" else advise_python
    path = tmp_path / "data"
    data = bytes(range(256)) * (3 * warm.PY_CHUNK // 256 + 7)
    path.write_bytes(data)
    with path.open("rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        warmer = Warmer(mm, len(data) + 4096, warm.POPULATE_READ, advise)  # end past the map
        bad = Warmer(mm, len(data), 0x7FFF, advise)
        warmer.join()
        bad.join()
        assert warmer.error in (0, 22)  # 22: a kernel without the advice
        assert warmer.done == (len(data) if warmer.error == 0 else 0)
        assert (bad.error, bad.done) == (22, 0)
        assert mm[:] == data
        warmer.stop()
        bad.stop()
        mm.close()


def test_a_map_closed_under_the_warmer_makes_it_stop_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_bytes(b"\x01" * (4 * warm.PY_CHUNK))
    with path.open("rb") as fh:
        for advise in (load_native_advise(), advise_python):
            if advise is None:
                continue

            def closing(
                mm: mmap.mmap, start: int, length: int, advice: int, real: warm.Advise = advise
            ) -> int:
                mm.close()  # what a collection running in the warmer's thread could do
                return real(mm, start, length, advice)

            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            warmer = Warmer(mm, len(mm), warm.POPULATE_READ, closing)
            warmer.join()
            warmer.stop()
            assert not warmer.alive
            assert (warmer.done, warmer.error) == (0, errno.EBADF)


def test_small_maps_are_not_warmed(log_path: Path) -> None:
    with open_log(log_path) as log:
        put(log, "a", b"1")
    with open_log(log_path) as log:
        assert not _warm_threads()
        assert log.read(log.header_len).kind is RecordKind.PUT


def test_a_process_exiting_with_logs_open_and_warming_exits_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "orders.log"
    _fill(path, 2000)
    program = f"""
import sys
from sowlib.storage import AppendLog, warm
warm.MIN_BYTES = 1
logs = [AppendLog({str(path)!r}, readonly=True) for _ in range(40)]
writer = AppendLog({str(path)!r}, slab_size=4096)
sys.exit(0)  # every log still open, its warmer perhaps still running
"""
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        )
        assert (done.returncode, done.stderr) == (0, "")
