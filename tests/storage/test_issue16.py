"""Issue 16, storage: committed data is never cut as a torn tail, a batch in flight is, a full
disk is an error at the write, locks are released on every path, symlinks are never followed."""

from __future__ import annotations

import errno
import gc
import os
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.errors import (
    CorruptRecordError,
    SowError,
    StoreFullError,
    StoreLockedError,
    StorePathError,
)
from sowlib.storage import AppendLog, FileSystem, RecordKind, WriterLock, verify
from sowlib.storage.format import HEAD_BYTES, RECORD_HEADER_SIZE, encode_record, record_problem

from .conftest import open_log, put, replay, uncommit


def _flip_bit(path: Path, offset: int, bit: int = 0) -> None:
    with path.open("r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ (1 << bit)]))


def _topic_file(store_dir: Path) -> Path:
    (found,) = store_dir.glob("*.sow")
    return found


# ---------------------------------------------------------------- item 2: committed end


def test_issue16_tombstone_checksum_flip_is_corruption(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish({"id": 1})
        t.publish({"id": 2})
        assert t.sow_delete("/id = 1") == 1
        log = t._log
        tomb = log.end_offset - 1  # the last byte of the tombstone's checksum
    path = _topic_file(tmp_path)
    for side in path.parent.glob("*.ckpt"):
        side.unlink()  # the full scan of a crash-free reopen without a checkpoint
    _flip_bit(path, tomb)
    for readonly in (False, True):
        with pytest.raises(CorruptRecordError) as info:
            SowStore(tmp_path, readonly=readonly)
        assert info.value.file == str(path)
    report = verify(path)
    assert not report.ok
    assert report.open_error_offset is not None


def test_issue16_tombstone_flip_with_a_checkpoint_never_resurrects(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish({"id": 1})
        t.publish({"id": 2})
        t.sow_delete("/id = 1")
        tomb = t._log.end_offset - 1
    path = _topic_file(tmp_path)
    _flip_bit(path, tomb)
    try:
        with SowStore(tmp_path) as store:
            assert sorted(r.doc["id"] for r in store.topic("t").sow()) == [2]
    except CorruptRecordError:
        pass  # detected is as good as right
    with pytest.raises(CorruptRecordError):  # the checkpoint is gone: the scan sees it
        SowStore(tmp_path)


def test_issue16_damaged_last_record_of_a_closed_log_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    put(log, "a", b"1")
    last = log.append(RecordKind.DELETE, "a", b"", timestamp=2.0)
    end = log.end_offset
    log.close()
    before = path.read_bytes()
    for at in range(last.offset, end):
        for bit in (0, 7):
            _flip_bit(path, at, bit)
            with pytest.raises(CorruptRecordError) as info:
                AppendLog(path)
            assert info.value.offset == last.offset
            with pytest.raises(CorruptRecordError):
                AppendLog(path, readonly=True)
            assert path.read_bytes() != before  # nothing was cut
            path.write_bytes(before)


def test_issue16_every_header_field_is_covered_by_the_checksum(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    rec = log.append(
        RecordKind.PUT, "key", b"payload", timestamp=5.0, expiration=9.0, correlation_id=b"c"
    )
    end = log.end_offset
    log.close()
    data = path.read_bytes()
    for at in range(rec.offset, end):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[at] ^= 1 << bit
            assert record_problem(bytes(damaged), rec.offset, end) is not None, (at, bit)


def test_issue16_flush_commits_the_end(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t.log")
    start = log.committed_end
    put(log, "a", b"1")
    assert log.committed_end == start
    log.flush()
    assert log.committed_end == log.end_offset
    log.close()


def test_issue16_read_entry_checks_the_checksum(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    rec = log.append(RecordKind.PUT, "k", b"p", timestamp=1.0, expiration=50.0)
    put(log, "after", b"p")  # a checkpoint checks only its last record
    log.close(checkpoint=b"blob")
    _flip_bit(path, rec.offset + RECORD_HEADER_SIZE)  # the expiration
    reader = AppendLog(path, readonly=True)
    assert reader.load_checkpoint() is not None  # the prefix is trusted at open
    with pytest.raises(CorruptRecordError):
        reader.read_entry(rec.offset)
    reader.close()


def test_issue16_compact_refuses_a_damaged_kept_record(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    recs = [put(log, f"k{i}", b"v" * 20) for i in range(4)]
    log.close(checkpoint=b"blob")
    _flip_bit(path, recs[1].offset + 40)
    log = open_log(path)  # from the checkpoint: the damage is not seen at open
    before = path.read_bytes()
    with pytest.raises(CorruptRecordError) as info:
        log.compact([r.offset for r in recs])
    assert info.value.offset == recs[1].offset
    assert path.read_bytes() == before
    assert log.compact([recs[0].offset, recs[3].offset])  # the damaged one is not kept
    assert [r.key for r in log.scan()] == ["k0", "k3"]
    log.close()


def test_issue16_a_key_that_is_not_utf8_is_a_corrupt_record(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    start = log.end_offset
    log.close()
    crafted = encode_record(1, b"\xff\xfe", b"", b"payload", 1, 0, 0)  # a valid checksum
    with path.open("r+b") as fh:
        fh.seek(start)
        fh.write(crafted)
    for readonly in (False, True):
        with pytest.raises(CorruptRecordError) as info:
            AppendLog(path, readonly=readonly)
        assert (info.value.file, info.value.offset) == (str(path), start)


# ---------------------------------------------------------------- item 7: batches in flight


def test_issue16_batch_in_flight_is_a_torn_write_however_large(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path, slab_size=1 << 20)
    put(log, "before", b"acknowledged")
    log.flush()
    start = log.end_offset
    log.append_puts([f"k{i}" for i in range(2000)], [b"x" * 50] * 2000, 3.0, 0.0)
    end = log.end_offset
    image = bytearray(path.read_bytes())  # the page cache a kill leaves, batch complete
    log.close()
    for hole in (HEAD_BYTES, 4096, (end - start) // 2):
        # the copy order of a large memcpy: the middle in place, the start not yet
        damaged = bytearray(image)
        damaged[start : start + hole] = bytes(hole)
        damaged[end - 64 : end] = bytes(64)
        path.write_bytes(bytes(damaged))
        uncommit(path, start)
        reader = AppendLog(path, readonly=True)
        assert replay(reader.scan()) == {"before": b"acknowledged"}
        reader.close()
        log = open_log(path)
        assert log.end_offset == start
        assert log.report.truncated_bytes > 0
        log.check()
        log.close()


def test_issue16_batch_writes_its_first_bytes_last(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t.log")
    put(log, "a", b"1")
    start = log.end_offset
    mm = log.mm
    assert mm is not None
    writes: list[tuple[int, int]] = []

    class Recording:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __setitem__(self, key: slice, value: bytes) -> None:
            writes.append((key.start, key.stop))
            self.inner[key] = value  # type: ignore[index]

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    log._commit(Recording(mm), b"\x01" * 100, start, 1, log.last_seq + 1)  # type: ignore[arg-type]
    assert writes == [(start + HEAD_BYTES, start + 100), (start, start + HEAD_BYTES)]
    log._release()

    log = open_log(tmp_path / "u.log")
    start = log.end_offset
    mm = log.mm
    writes.clear()
    log.mm = Recording(mm)  # type: ignore[assignment]
    put(log, "b", b"2" * 50)
    # the single-record append: everything but the first bytes, then the first bytes
    assert writes == [(start + HEAD_BYTES, log.end_offset), (start, start + HEAD_BYTES)]
    log.mm = mm
    log.close()


# ---------------------------------------------------------------- item 8: full disk, locks


class FullDisk(FileSystem):
    """Reserving or writing fails with ENOSPC once ``full`` is set."""

    full = False

    def allocate(self, fd: int, offset: int, length: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().allocate(fd, offset, length)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().fsync(fd)


def test_issue16_growth_on_a_full_disk_is_store_full_error(tmp_path: Path) -> None:
    fs = FullDisk()
    path = tmp_path / "t.log"
    log = open_log(path, fs=fs)
    acked: dict[str, bytes] = {}
    while log.file_size == 4096 or log.file_size - log.end_offset >= 3100:
        key = f"k{len(acked)}"
        acked[key] = b"v" * 100
        put(log, key, b"v" * 100)
    fs.full = True
    size, end = log.file_size, log.end_offset
    with pytest.raises(StoreFullError) as info:
        put(log, "x", b"y" * 3900)
    assert isinstance(info.value, OSError)
    assert (log.file_size, os.path.getsize(path), log.end_offset) == (size, size, end)
    with pytest.raises(StoreFullError):
        log.append_many([(RecordKind.PUT, "b", b"z" * 3000, 1.0, 0.0, b"")] * 3)
    with pytest.raises(SowError):
        log.close()
    assert log.closed
    log.close()  # a second close is a no-op
    fs.full = False
    again = open_log(path)
    assert replay(again.scan()) == acked
    again.check()
    again.close()


def test_issue16_compaction_on_a_full_disk_leaves_the_log(tmp_path: Path) -> None:
    fs = FullDisk()
    path = tmp_path / "t.log"
    log = open_log(path, fs=fs)
    recs = [put(log, f"k{i % 3}", b"v" * 30) for i in range(9)]
    fs.full = True
    with pytest.raises(StoreFullError):
        log.compact([r.offset for r in recs[-3:]])
    assert not list(tmp_path.glob("*.tmp"))
    fs.full = False
    assert replay(log.scan()) == replay(recs)
    log.close()


def test_issue16_store_close_on_a_full_disk_releases_the_lock(tmp_path: Path) -> None:
    fs = FullDisk()
    store = SowStore(tmp_path, fs=fs)
    t = store.create_topic("t", keys=["/id"])
    t.publish({"id": 1})
    fs.full = True
    with pytest.raises(SowError):
        store.close()
    store.close()  # no-op
    fs.full = False
    with SowStore(tmp_path) as again:
        assert len(again.topic("t")) == 1


def test_issue16_dropped_writer_store_releases_its_lock(tmp_path: Path) -> None:
    store = SowStore(tmp_path)
    store.create_topic("t", keys=["/id"]).publish({"id": 1})
    del store
    gc.collect()
    with SowStore(tmp_path) as again:
        assert len(again.topic("t")) == 1


def test_issue16_dropped_writer_lock_is_released(tmp_path: Path) -> None:
    WriterLock(tmp_path)
    gc.collect()
    WriterLock(tmp_path).release()
    held = WriterLock(tmp_path)
    with pytest.raises(StoreLockedError):
        WriterLock(tmp_path)
    held.release()


# ---------------------------------------------------------------- item 6: symlinks


def test_issue16_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    store_dir = tmp_path / "s"
    store_dir.mkdir()
    (store_dir / "LOCK").symlink_to(target)
    with pytest.raises(StorePathError):
        SowStore(store_dir)
    assert target.read_text() == "precious"


def test_issue16_planted_temp_file_symlinks_are_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    store_dir = tmp_path / "s"
    with SowStore(store_dir) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish({"id": 1})
        path = Path(t._log.path)
        for suffix in (".ckpt.tmp", ".compact.tmp"):
            Path(str(path) + suffix).symlink_to(target)
        t.compact()
    for suffix in (".ckpt.tmp", ".compact.tmp", ".create.tmp"):
        assert not os.path.lexists(str(path) + suffix)
    assert not Path(str(path) + ".ckpt").is_symlink()
    assert target.read_text() == "precious"


def test_issue16_symlinked_log_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.log"
    open_log(real).close()
    link = tmp_path / "link.log"
    link.symlink_to(real)
    with pytest.raises(StorePathError):
        AppendLog(link)
    with pytest.raises(StorePathError):
        verify(link)


def test_issue16_scanning_records_trusted_from_a_checkpoint_checks_them(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = open_log(path)
    recs = [put(log, f"k{i}", b"v" * 20) for i in range(4)]
    log.close(checkpoint=b"blob")
    _flip_bit(path, recs[1].offset + 40)  # a payload byte
    for readonly in (True, False):  # the reader first: the writer consumes the checkpoint
        log = open_log(path, readonly=readonly)
        assert log.report.from_checkpoint
        with pytest.raises(CorruptRecordError) as info:
            list(log.scan())
        assert info.value.offset == recs[1].offset
        assert list(log.scan(recs[2].offset)) == recs[2:]
        log.close()
