"""Format version 2: optional fields by flag, u64 keys, torn tails, flips, salvage, compaction."""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import xxhash

from sowlib.errors import CorruptRecordError, StoreClosedError, UnsupportedOperationError
from sowlib.storage import AppendLog, LogRecord, RecordKind, verify
from sowlib.storage.compaction import PAGE
from sowlib.storage.format import (
    FLAG_CORRELATION,
    FLAG_EXPIRATION,
    FLAG_U64_KEY,
    RECORD_HEADER_SIZE,
    decode_record,
    encode_record,
    u64_key,
)
from sowlib.storage.framing import frame_batch, frame_one, frame_puts, framed_size

from .conftest import open_log, put, replay, uncommit

Factory = Callable[..., AppendLog]

U64_KEYS = ["0", "1", "42", "18446744073709551615", "10000000000000000000"]
TEXT_KEYS = ["00", "01", "-1", "+1", "", " 1", "1 ", "1_0", "18446744073709551616", "١٢", "ü/k"]


@pytest.mark.parametrize("key", U64_KEYS + TEXT_KEYS)
def test_keys_decode_to_exactly_the_same_text(new_log: Factory, key: str) -> None:
    log = new_log()
    rec = log.append(RecordKind.PUT, key, b"payload", timestamp=1.0)
    kind_byte = log_bytes(log)[rec.offset + 5]
    assert bool(kind_byte & FLAG_U64_KEY) == (key in U64_KEYS)
    size = log.end_offset - rec.offset
    stored = 8 if key in U64_KEYS else len(key.encode())
    assert size == 36 + stored + len(b"payload") == framed_size(key, 0, 7, 0.0)
    assert log.read(rec.offset).key == key
    assert [r.key for r in log.scan()] == [key]
    assert [e[5] for e in log.scan_entries()] == [key]
    log.close()
    again = new_log()
    assert [e[5] for e in again.scan_entries()] == [key]
    assert again.read(rec.offset) == rec


def test_u64_key_rule() -> None:
    assert [u64_key(k.encode()) for k in U64_KEYS] == [int(k) for k in U64_KEYS]
    assert [u64_key(k.encode()) for k in TEXT_KEYS] == [None] * len(TEXT_KEYS)
    assert u64_key(b"1" * 4400) is None


@pytest.mark.parametrize("exp", [0.0, 9.5])
@pytest.mark.parametrize("corr", [b"", b"corr-id"])
@pytest.mark.parametrize("key", ["12345678901234567890", "text-key"])
def test_each_flag_is_set_exactly_when_its_field_is_stored(
    new_log: Factory, exp: float, corr: bytes, key: str
) -> None:
    log = new_log()
    rec = log.append(
        RecordKind.EXPIRE, key, b"p", timestamp=2.0, expiration=exp, correlation_id=corr
    )
    raw = log_bytes(log)[rec.offset : log.end_offset]
    length, marker, kind_byte, key_len, payload_len = struct.unpack_from("<IBBHI", raw)
    assert (length, marker, payload_len) == (len(raw), 0xF5, 1)
    assert kind_byte & 0x0F == RecordKind.EXPIRE
    assert bool(kind_byte & FLAG_EXPIRATION) == bool(exp)
    assert bool(kind_byte & FLAG_CORRELATION) == bool(corr)
    assert key_len == (8 if key[0] == "1" else len(key))
    assert len(raw) == 36 + key_len + 1 + (8 if exp else 0) + (2 + len(corr) if corr else 0)
    assert raw[-8:] == xxhash.xxh3_64_digest(raw[:-8])
    assert rec == LogRecord(rec.offset, RecordKind.EXPIRE, 1, 2.0, exp, key, corr, b"p")
    assert log.read(rec.offset) == rec
    assert log.read_payload(rec.offset) == b"p"
    assert list(log.scan_entries()) == [(*rec[:7], len(raw))]
    assert raw == encode_record(
        RecordKind.EXPIRE, key.encode(), corr, b"p", 1, 2_000_000, round(exp * 1e6)
    )


def test_fast_paths_agree_with_the_reference_encoder() -> None:
    keys = ["7", "18446744073709551615", "18446744073709551616", "x", "007"]
    payloads = [k.encode() * 5 for k in keys]
    for exp in (0.0, 12.25):
        data, offsets, sizes = frame_puts(keys, payloads, 3.5, exp, 10, 100, 1 << 20)
        ref = [
            encode_record(1, k.encode(), b"", p, 11 + i, 3_500_000, round(exp * 1e6))
            for i, (k, p) in enumerate(zip(keys, payloads, strict=True))
        ]
        assert data == b"".join(ref)
        assert sizes == [len(r) for r in ref]
        assert offsets == [100 + sum(sizes[:i]) for i in range(len(keys))]
        items = [(RecordKind.PUT, k, p, 3.5, exp, b"") for k, p in zip(keys, payloads, strict=True)]
        assert frame_batch(items, 10, 100, 1 << 20)[0] == data
        one, rec = frame_one(1, keys[1], payloads[1], 3.5, exp, b"", 12, 0, 1 << 20)
        assert one == ref[1]
        assert decode_record(one, 0, len(one)) == rec


def test_key_or_correlation_id_over_65535_bytes_is_refused(new_log: Factory) -> None:
    log = new_log(slab_size=1 << 20)
    with pytest.raises(UnsupportedOperationError):
        put(log, "k" * 65536, b"")
    with pytest.raises(UnsupportedOperationError):
        log.append(RecordKind.PUT, "k", b"", timestamp=0, correlation_id=b"c" * 65536)
    with pytest.raises(UnsupportedOperationError):
        log.append_puts(["ok", "k" * 65536], [b"", b""], 1.0, 0.0)
    assert log.record_count == 0
    assert put(log, "k" * 65535, b"").key == "k" * 65535


def log_bytes(log: AppendLog) -> bytes:
    log.flush()
    with open(log.path, "rb") as fh:
        return fh.read()


def _fill(path: Path) -> list[LogRecord]:
    log = open_log(path)
    recs = [
        log.append(
            RecordKind.PUT,
            str(10**19 + i) if i % 2 else f"k{i}",
            f"payload {i}".encode() * 4,
            timestamp=float(i),
            expiration=100.0 + i if i % 3 else 0.0,
            correlation_id=b"cid" if i % 4 == 1 else b"",
        )
        for i in range(8)
    ]
    log.close()
    return recs


@pytest.mark.slow
def test_torn_v2_record_at_every_byte(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine.log"
    recs = _fill(pristine)
    with AppendLog(pristine, readonly=True) as reader:
        end = reader.end_offset
    data = pristine.read_bytes()
    last = recs[-1]
    for last in recs[-2:]:  # the last record has an expiration, the one before a corr id
        start = last.offset
        cut_end = end if last is recs[-1] else recs[-1].offset
        for cut in range(cut_end - start):
            path = tmp_path / "cut.log"
            torn = bytearray(data)
            torn[start + cut : end] = bytes(end - start - cut)  # never written
            path.write_bytes(bytes(torn))
            uncommit(path, start)  # a crash: the torn record was never committed
            log = open_log(path)
            kept = [r for r in recs if r.offset < start]
            assert list(log.scan()) == kept, cut
            assert log.end_offset == start
            assert (log.report.truncated_bytes > 0) == (cut > 0)
            log.check()
            log.close()


def test_any_flipped_byte_of_a_middle_record_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    data = path.read_bytes()
    victim = recs[3]
    for at in range(victim.offset, recs[4].offset):
        damaged = bytearray(data)
        damaged[at] ^= 0x5A
        path.write_bytes(bytes(damaged))
        with pytest.raises(CorruptRecordError) as info:
            AppendLog(path)  # a writer: a reader would re-read ~0.2 s for a live writer
        assert info.value.offset == victim.offset, at
        report = verify(path)
        assert report.corrupt_offsets == (victim.offset,)
        assert report.records == len(recs) - 1


def test_salvage_resyncs_after_damage_of_every_field(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    damaged = bytearray(path.read_bytes())
    for victim, delta in ((recs[1], 0), (recs[3], 4), (recs[5], RECORD_HEADER_SIZE + 3)):
        damaged[victim.offset + delta] ^= 0xFF
    path.write_bytes(bytes(damaged))
    report = verify(path, repair=True)
    assert report.repaired
    assert report.corrupt_offsets == (recs[1].offset, recs[3].offset, recs[5].offset)
    kept = [r for i, r in enumerate(recs) if i not in (1, 3, 5)]
    log = open_log(path)
    assert [r[2:] for r in log.scan()] == [r[2:] for r in kept]
    log.check()


def test_compaction_copies_records_verbatim_and_trims_the_file(new_log: Factory) -> None:
    log = new_log(slab_size=1 << 16)
    recs = [put(log, str(i % 40), bytes([i % 256]) * 150) for i in range(400)]
    old = log_bytes(log)
    assert log.file_size > 2 * PAGE
    latest = {r.key: r for r in recs}
    keep = {r.offset for r in latest.values()}
    mapping = log.compact(lambda rec: rec.offset in keep)
    new = log_bytes(log)
    for old_off, new_off in mapping.items():
        size = framed_size(recs[0].key, 0, 150, 0.0)
        assert new[new_off : new_off + size] == old[old_off : old_off + size]
    assert log.end_offset == log.header_len + sum(
        framed_size(r.key, 0, 150, 0.0) for r in latest.values()
    )
    assert log.file_size == -(-log.end_offset // PAGE) * PAGE == os.path.getsize(log.path)
    assert log.record_count == 40
    log.check()
    put(log, "after", b"x" * 3000)  # growth past the trimmed size adds slabs as before
    assert log.file_size % (1 << 16) == 0
    log.close()
    again = new_log()
    assert replay(again.scan()) == {
        **{k: r.payload for k, r in latest.items()},
        "after": b"x" * 3000,
    }
    again.check()


def test_compaction_of_everything_leaves_one_page(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    log.compact(lambda rec: False)
    assert log.file_size == PAGE
    assert put(log, "b", b"2").offset == log.header_len


def test_crash_reopen_hands_out_the_verified_entries_once(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    log = open_log(path)
    assert not log.report.from_checkpoint
    pending = log._pending
    assert pending is not None
    assert len(pending[2]) == len(recs)
    after = put(log, "later", b"z")  # appended between the open and the first scan
    entries = list(log.scan_entries())
    assert log._pending is None
    walked = list(log.scan_entries())  # the second call walks the file
    assert entries == walked
    assert [e[0] for e in entries] == [r.offset for r in recs] + [after.offset]
    assert entries[: len(recs)] == [
        (*r[:7], framed_size(r.key, len(r.correlation_id), len(r.payload), r.expiration))
        for r in recs
    ]


def test_open_entries_are_only_for_their_start(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    log = open_log(path)
    assert [e[0] for e in log.scan_entries(recs[2].offset)] == [r.offset for r in recs[2:]]
    assert log._pending is None
    log.close()
    log = open_log(path)
    assert [r.offset for r in log.scan()] == [r.offset for r in recs]
    assert log._pending is None  # scan() drops them: nobody will ask


def test_checkpoint_open_hands_out_the_tail_entries(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    log = open_log(path)
    log.close(checkpoint=b"blob")
    end = log.end_offset
    with path.open("r+b") as fh:  # a record appended after the clean close
        fh.seek(end)
        fh.write(encode_record(RecordKind.DELETE, b"k0", b"", b"", 99, 5, 0))
    log = open_log(path)
    assert log.report.from_checkpoint
    assert log.load_checkpoint() == (b"blob", end)
    assert log._pending is not None
    assert log._pending[0] == end
    entries = list(log.scan_entries(end))
    assert [(e[0], e[1], e[2], e[5]) for e in entries] == [(end, RecordKind.DELETE, 99, "k0")]
    assert [e[0] for e in log.scan_entries()] == [r.offset for r in recs] + [end]


@pytest.mark.parametrize("action", ["close", "compact"])
def test_handed_out_entries_stop_when_the_epoch_ends(tmp_path: Path, action: str) -> None:
    path = tmp_path / "t.log"
    _fill(path)
    log = open_log(path)
    it = log.scan_entries()
    assert next(it)[0] == log.header_len
    if action == "close":
        log.close()
    else:
        log.compact(lambda rec: True)
    with pytest.raises(StoreClosedError):
        next(it)


def test_mid_file_corruption_still_raises_at_open(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    with path.open("r+b") as fh:
        fh.seek(recs[4].offset + RECORD_HEADER_SIZE + 1)
        byte = fh.read(1)[0]
        fh.seek(-1, 1)
        fh.write(bytes([byte ^ 1]))
    for readonly in (False, True):
        with pytest.raises(CorruptRecordError) as info:
            open_log(path, readonly=readonly)
        assert info.value.offset == recs[4].offset


def test_open_entries_stop_at_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    recs = _fill(path)
    copy = tmp_path / "copy.log"
    shutil.copyfile(path, copy)
    with AppendLog(copy, readonly=True) as reader:
        end = reader.end_offset
    with copy.open("r+b") as fh:
        fh.seek(end - 5)
        fh.write(bytes(5))
    uncommit(copy, recs[-1].offset)
    log = open_log(copy)
    assert [e[0] for e in log.scan_entries()] == [r.offset for r in recs[:-1]]
    assert log.report.truncated_bytes > 0
