"""AppendLog API: framing round-trips, growth, errors, checkpoints, scan and read."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowlib.errors import (
    ArgumentError,
    ConfigError,
    CorruptRecordError,
    FormatVersionError,
    ReadOnlyError,
    RecordTooLargeError,
    StoreClosedError,
    StoreFullError,
    StoreLockedError,
    UnsupportedOperationError,
)
from sowlib.storage import (
    FORMAT_VERSION,
    MAGIC,
    AppendLog,
    FileSystem,
    LogRecord,
    RecordKind,
    read_header,
)
from sowlib.storage.format import (
    decode_header,
    decode_record,
    encode_header,
    encode_record,
    record_size,
    stored_key,
)
from sowlib.storage.framing import framed_size

from .conftest import META, SLAB, open_log, put, replay

Factory = Callable[..., AppendLog]


@given(
    kind=st.sampled_from(list(RecordKind)),
    key=st.text(max_size=20),
    corr=st.binary(max_size=10),
    payload=st.binary(max_size=300),
    seq=st.integers(1, 2**63),
    ts=st.integers(-(2**62), 2**62),
    exp=st.integers(0, 2**62),
)
def test_record_encoding_round_trips(
    kind: RecordKind, key: str, corr: bytes, payload: bytes, seq: int, ts: int, exp: int
) -> None:
    data = encode_record(kind, key.encode(), corr, payload, seq, ts, exp)
    stored = len(stored_key(key.encode())[1])
    assert len(data) == record_size(stored, len(corr), len(payload), exp != 0)
    assert len(data) == framed_size(key, len(corr), len(payload), exp / 1_000_000)
    rec = decode_record(b"\0" * 13 + data, 13, 13 + len(data))
    assert rec == LogRecord(13, kind, seq, ts / 1_000_000, exp / 1_000_000, key, corr, payload)


def test_header_round_trips() -> None:
    data = encode_header(7, 1_700_000_000.25, 42, META)
    assert len(data) % 8 == 0
    assert data.startswith(MAGIC)
    header = decode_header(data, len(data))
    assert (header.generation, header.base_seq, header.meta) == (7, 42, META)
    assert header.created == 1_700_000_000.25
    assert header.version == FORMAT_VERSION


def test_append_returns_what_read_and_scan_return(new_log: Factory) -> None:
    log = new_log()
    a = log.append(RecordKind.PUT, "k1", b"v1", timestamp=1.5, expiration=9.25, correlation_id=b"c")
    b = log.append(RecordKind.DELETE, "k1", b"", timestamp=2.0)
    assert (a.seq, b.seq, log.last_seq) == (1, 2, 2)
    assert a.offset == log.header_len
    assert b.offset > a.offset
    assert log.read(a.offset) == a
    assert log.read(b.offset) == b
    assert log.read_payload(a.offset) == b"v1"
    assert list(log.scan()) == [a, b]
    assert list(log.scan(start=b.offset)) == [b]
    assert list(log.scan(start=log.end_offset)) == []
    assert log.record_count == 2
    log.check()


def test_times_are_stored_to_the_microsecond(new_log: Factory) -> None:
    log = new_log()
    rec = log.append(RecordKind.PUT, "k", b"v", timestamp=1.0000004, expiration=2.0000006)
    assert (rec.timestamp, rec.expiration) == (1.0, 2.000001)
    assert log.read(rec.offset) == rec


def test_log_grows_by_slabs_and_survives_reopen(new_log: Factory, log_path: Path) -> None:
    log = new_log()
    written = [put(log, f"k{i}", bytes([i % 256]) * (i % 500)) for i in range(200)]
    assert log.file_size % SLAB == 0
    assert log.file_size > SLAB
    assert os.path.getsize(log_path) == log.file_size
    log.close()
    again = new_log()
    assert list(again.scan()) == written
    assert again.last_seq == 200
    assert again.report.records == 200
    assert again.report.truncated_bytes == 0
    assert not again.report.from_checkpoint
    again.check()


def test_append_many_is_one_batch(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    items = [(RecordKind.PUT, f"k{i}", b"x" * i, 10.0 + i, 0.0, b"") for i in range(100)]
    recs = log.append_many(items)
    assert [r.seq for r in recs] == list(range(2, 102))
    assert list(log.scan())[1:] == recs
    assert log.append_many([]) == []
    log.check()


def test_explicit_seq_must_increase(new_log: Factory) -> None:
    log = new_log()
    assert log.append(RecordKind.PUT, "a", b"", timestamp=0, seq=10).seq == 10
    with pytest.raises(UnsupportedOperationError):
        log.append(RecordKind.PUT, "a", b"", timestamp=0, seq=10)
    assert put(log, "b", b"").seq == 11


def test_record_larger_than_a_slab_is_refused(new_log: Factory) -> None:
    log = new_log()
    with pytest.raises(RecordTooLargeError) as info:
        put(log, "big", b"x" * SLAB)
    assert info.value.limit == SLAB - 64
    batch = [
        (RecordKind.PUT, "ok", b"", 0.0, 0.0, b""),
        (RecordKind.PUT, "big", b"x" * SLAB, 0.0, 0.0, b""),
    ]
    with pytest.raises(RecordTooLargeError):
        log.append_many(batch)
    assert log.record_count == 0
    assert log.last_seq == 0
    put(log, "fits", b"x" * (SLAB - 64 - 64))


def test_unknown_kind_is_refused(new_log: Factory) -> None:
    log = new_log()
    with pytest.raises(UnsupportedOperationError):
        log.append(9, "k", b"", timestamp=0)  # type: ignore[arg-type]


def test_tiny_slab_is_a_config_error(log_path: Path) -> None:
    with pytest.raises(ConfigError):
        AppendLog(log_path, meta=META, slab_size=100)


def test_missing_file_without_meta(log_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AppendLog(log_path, readonly=True)
    with pytest.raises(FileNotFoundError):
        AppendLog(log_path)
    assert not log_path.exists()


def test_existing_meta_wins(new_log: Factory, log_path: Path) -> None:
    new_log().close()
    log = AppendLog(log_path, meta=b"other")
    assert log.meta == META
    assert log.generation == 0
    log.close()


def test_readonly_handle_refuses_writes(new_log: Factory) -> None:
    new_log().close()
    reader = new_log(readonly=True)
    with pytest.raises(ReadOnlyError):
        put(reader, "k", b"v")
    with pytest.raises(ReadOnlyError):
        reader.compact(lambda rec: True)
    reader.flush()  # a no-op, not an error


def test_use_after_close(new_log: Factory) -> None:
    log = new_log()
    put(log, "k", b"v")
    log.close()
    log.close()
    assert log.closed
    for call in (
        lambda: put(log, "k", b"v"),
        lambda: log.read(log.header_len),
        lambda: list(log.scan()),
        log.flush,
        log.check,
        log.refresh,
        log.load_checkpoint,
    ):
        with pytest.raises(StoreClosedError):
            call()


def test_a_suspended_scan_fails_after_close(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    put(log, "b", b"2")
    it = log.scan()
    assert next(it).key == "a"
    log.close()
    with pytest.raises(StoreClosedError):
        next(it)


def test_scan_sees_appends_made_while_suspended(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    it = log.scan()
    assert next(it).key == "a"
    for i in range(100):  # crosses slabs: the map is replaced under the iterator
        put(log, f"k{i}", b"x" * 100)
    assert len(list(it)) == 100


def test_bad_offsets_are_refused(new_log: Factory) -> None:
    log = new_log()
    rec = put(log, "k", b"value")
    for bad in (0, rec.offset + 8, log.end_offset, 10**9):
        with pytest.raises(CorruptRecordError) as info:
            log.read(bad)
        assert info.value.offset == bad
    with pytest.raises(CorruptRecordError):
        log.read_payload(rec.offset + 8)
    with pytest.raises(CorruptRecordError):
        log.scan(start=rec.offset + 8)


def test_not_a_log_is_a_format_error(log_path: Path) -> None:
    log_path.write_bytes(b"hello, this is not a log at all" * 10)
    with pytest.raises(FormatVersionError) as info:
        AppendLog(log_path)
    assert info.value.found == b"hello, t"
    log_path.write_bytes(b"")
    with pytest.raises(FormatVersionError):
        AppendLog(log_path, readonly=True)


@pytest.mark.parametrize("version", [1, 2, FORMAT_VERSION + 1])
def test_other_versions_are_a_format_error(new_log: Factory, log_path: Path, version: int) -> None:
    assert FORMAT_VERSION == 3
    new_log().close()
    with log_path.open("r+b") as fh:
        fh.seek(8)
        fh.write(struct.pack("<H", version))
    for opener in (AppendLog, lambda p: AppendLog(p, readonly=True), read_header):
        with pytest.raises(FormatVersionError) as info:
            opener(log_path)
        assert (info.value.found, info.value.expected) == (version, FORMAT_VERSION)
        assert bool(info.value.hint) == (version == 2)  # format 2 names the way out


@pytest.mark.parametrize("where", [20, 30, 44])
def test_damaged_header_is_corruption_at_zero(new_log: Factory, log_path: Path, where: int) -> None:
    new_log().close()
    with log_path.open("r+b") as fh:
        fh.seek(where)
        byte = fh.read(1)
        fh.seek(where)
        fh.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(CorruptRecordError) as info:
        AppendLog(log_path, readonly=True)
    assert info.value.offset == 0


def test_second_writer_on_the_same_file_is_refused(new_log: Factory, log_path: Path) -> None:
    new_log()
    with pytest.raises(StoreLockedError):
        AppendLog(log_path)
    AppendLog(log_path, readonly=True).close()


def test_checkpoint_is_used_once_by_the_writer(new_log: Factory, log_path: Path) -> None:
    log = new_log()
    first = [put(log, f"k{i}", b"v") for i in range(5)]
    log.close(checkpoint=b"STATE")
    assert Path(str(log_path) + ".ckpt").exists()
    reader = new_log(readonly=True)
    assert reader.load_checkpoint() == (b"STATE", log.end_offset)
    assert reader.report.from_checkpoint
    reader.close()
    again = new_log()
    assert again.report.from_checkpoint
    assert again.report.records == 5
    assert again.load_checkpoint() == (b"STATE", log.end_offset)
    assert not Path(str(log_path) + ".ckpt").exists()
    tail = put(again, "after", b"x")
    assert list(again.scan(start=log.end_offset)) == [tail]
    assert list(again.scan()) == [*first, tail]
    again.check()
    again.close()  # no checkpoint this time: the next open scans everything
    third = new_log()
    assert not third.report.from_checkpoint
    assert third.load_checkpoint() is None
    assert third.report.records == 6
    assert third.last_seq == 6


def test_checkpoint_of_an_empty_log(new_log: Factory) -> None:
    new_log().close(checkpoint=b"")
    log = new_log()
    assert log.load_checkpoint() == (b"", log.header_len)
    assert log.report.from_checkpoint


def test_foreign_or_damaged_checkpoint_is_ignored(new_log: Factory, log_path: Path) -> None:
    log = new_log()
    put(log, "k", b"v")
    log.close(checkpoint=b"STATE")
    ckpt = Path(str(log_path) + ".ckpt")
    data = bytearray(ckpt.read_bytes())
    data[-12] ^= 1
    ckpt.write_bytes(bytes(data))
    again = new_log()
    assert again.load_checkpoint() is None
    assert not again.report.from_checkpoint
    assert replay(again.scan()) == {"k": b"v"}


def test_checkpoint_does_not_survive_compaction(new_log: Factory) -> None:
    log = new_log()
    put(log, "k", b"v")
    log.close(checkpoint=b"STATE")
    again = new_log()
    again.compact(lambda rec: True)
    assert again.load_checkpoint() is None


def test_compaction_keeps_seqs_and_never_reuses_them(new_log: Factory) -> None:
    log = new_log()
    a = put(log, "a", b"1")
    put(log, "b", b"2")
    c = log.append(RecordKind.DELETE, "b", b"", timestamp=3.0)
    mapping = log.compact(lambda rec: rec.key == "a", meta=b"new meta")
    assert mapping == {a.offset: log.header_len}
    assert log.generation == 1
    assert log.meta == b"new meta"
    assert [(r.key, r.seq) for r in log.scan()] == [("a", 1)]
    assert log.last_seq == c.seq
    assert put(log, "d", b"4").seq == c.seq + 1
    log.check()
    log.close()
    again = new_log()
    assert again.generation == 1
    assert again.last_seq == c.seq + 1
    again.compact(lambda rec: False)
    assert again.record_count == 0
    assert again.last_seq == c.seq + 1
    again.close()
    assert new_log().last_seq == c.seq + 1


def test_compact_sorted_gives_the_new_offsets_compact_maps_to(
    new_log: Factory, tmp_path: Path
) -> None:
    # The topic layer's compaction (compact_sorted: the new offsets in a list, no dict)
    # leaves the file compact of the same offsets leaves, and gives its mapping's values.
    log = new_log()
    recs = [put(log, f"k{i % 7}", b"x" * (i % 5)) for i in range(40)]
    keep = sorted(r.offset for r in recs[::3])
    log.close()
    copy = tmp_path / "copy.log"
    copy.write_bytes(Path(log.path).read_bytes())
    reference = AppendLog(str(copy))
    try:
        mapping = reference.compact(set(keep))
        again = new_log()
        with pytest.raises(ArgumentError):
            again.compact_sorted(list(reversed(keep)))
        assert again.compact_sorted(keep) == [mapping[off] for off in keep]
        assert [(r.key, r.seq, r.offset) for r in again.scan()] == [
            (r.key, r.seq, r.offset) for r in reference.scan()
        ]
        with pytest.raises(CorruptRecordError):
            again.compact_sorted([again.end_offset + 8])
    finally:
        reference.close()


def test_compaction_stops_a_suspended_scan(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    put(log, "b", b"2")
    it = log.scan()
    next(it)
    log.compact(lambda rec: True)
    with pytest.raises(StoreClosedError):
        next(it)


def test_sync_mode_flushes_every_append(log_path: Path) -> None:
    calls: list[str] = []

    class Counting(FileSystem):
        def fsync(self, fd: int) -> None:
            calls.append("fsync")
            super().fsync(fd)

    log = open_log(log_path, sync=True, fs=Counting())
    before = len(calls)
    put(log, "k", b"v")
    log.append_many([(RecordKind.PUT, "k", b"v", 0.0, 0.0, b"")] * 3)
    assert len(calls) - before == 2
    log.close()


def test_read_header_does_not_open_the_log(new_log: Factory, log_path: Path) -> None:
    log = new_log()
    put(log, "k", b"v")
    log.close(checkpoint=b"STATE")
    header = read_header(log_path)
    assert (header.meta, header.generation) == (META, 0)
    assert Path(str(log_path) + ".ckpt").exists()  # a writer open would have consumed it
    log_path.write_bytes(b"nope")
    with pytest.raises(FormatVersionError):
        read_header(log_path)


def test_scan_and_read_agree_on_large_times(new_log: Factory) -> None:
    log = new_log()
    rec = log.append(RecordKind.PUT, "k", b"v", timestamp=2.0**62 / 1e6 + 0.5, expiration=1e12)
    assert log.read(rec.offset) == rec
    assert list(log.scan()) == [rec]


def test_a_compaction_of_several_chunks_keeps_every_record_and_writes_through_the_seam(
    log_path: Path,
) -> None:
    """Several MiB of kept records, gathered into chunks of about 1 MiB and written as
    they come: every kept record reads back, every byte went through
    ``FileSystem.write``, and a full disk there leaves the old file as it was."""
    written: list[int] = []

    class Counting(FileSystem):
        full = False

        def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
            if self.full:
                raise OSError(28, "No space left on device")
            written.append(len(data))
            return super().write(fd, data)

    fs = Counting()
    log = open_log(log_path, slab_size=1 << 22, fs=fs)
    payload = b"p" * 3000
    for i in range(1500):  # about 4.5 MB, two versions of every other key
        put(log, f"k{i % 1000}", payload + b"%d" % i)
    want = replay(log.scan())
    fs.full = True
    with pytest.raises(StoreFullError):
        log.compact(lambda rec: True)
    assert replay(log.scan()) == want  # the old file untouched
    fs.full = False
    written.clear()
    log.compact(lambda rec: replay_keeps(rec, want))
    assert replay(log.scan()) == want
    assert sum(written) == log.end_offset
    assert max(written) >= 1 << 20  # written a chunk at a time, not record by record
    log.check()
    log.close()


def replay_keeps(rec: LogRecord, want: dict[str, bytes]) -> bool:
    """Whether ``rec`` is the live version of its key in ``want``."""
    return want.get(rec.key) == rec.payload
