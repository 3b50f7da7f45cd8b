"""The append and scan hot paths: byte-identical framing, ``scan_entries``, LogRecord values."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import (
    CorruptRecordError,
    RecordTooLargeError,
    StoreClosedError,
    UnsupportedOperationError,
)
from sowlib.storage import AppendLog, LogRecord, RecordKind
from sowlib.storage.format import decode_record, encode_record
from sowlib.storage.framing import frame_batch, frame_one, frame_puts, framed_size
from sowlib.storage.memory import MemoryLog

from .conftest import put

Factory = Callable[..., AppendLog]

item = st.tuples(
    st.sampled_from(list(RecordKind)),
    st.text(max_size=12),
    st.binary(max_size=90),
    st.integers(0, 2**50).map(lambda us: us / 1_000_000),
    st.integers(0, 2**50).map(lambda us: us / 1_000_000),
    st.binary(max_size=9),
)


@settings(max_examples=60)
@given(items=st.lists(item, max_size=6), seq=st.integers(0, 2**40))
def test_fast_framing_writes_the_specified_bytes(
    items: list[tuple[RecordKind, str, bytes, float, float, bytes]], seq: int
) -> None:
    expected = b"".join(
        encode_record(kind, key.encode(), corr, payload, seq + i, round(ts * 1e6), round(exp * 1e6))
        for i, (kind, key, payload, ts, exp, corr) in enumerate(items, 1)
    )
    data, records = frame_batch(items, seq, 64, 1 << 20)
    assert data == expected
    buf = bytes(64) + data
    assert records == [decode_record(buf, rec.offset, len(buf)) for rec in records]
    for i, (kind, key, payload, ts, exp, corr) in enumerate(items, 1):
        one, rec = frame_one(kind, key, payload, ts, exp, corr, seq + i, 64, 1 << 20)
        assert one == encode_record(
            kind, key.encode(), corr, payload, seq + i, round(ts * 1e6), round(exp * 1e6)
        )
        assert rec == decode_record(bytes(64) + one, 64, 64 + len(one))


def test_appended_record_matches_the_documented_layout(new_log: Factory) -> None:
    log = new_log()
    off = log.end_offset
    log.append(RecordKind.PUT, "k", b"pay", timestamp=1.5, expiration=2.0, correlation_id=b"c")
    second = log.end_offset
    log.append(RecordKind.DELETE, "42", b"", timestamp=3.0)
    end = log.end_offset
    first = (
        struct.pack("<IBBHIQq", 51, 0xF5, 0x31, 1, 3, 1, 1_500_000)
        + struct.pack("<q", 2_000_000)
        + struct.pack("<H", 1)
        + b"c"
        + b"k"
        + b"pay"
    )
    tomb = struct.pack("<IBBHIQq", 44, 0xF5, 0x42, 8, 0, 2, 3_000_000) + struct.pack("<Q", 42)
    log.close()
    raw = log_bytes(log)
    assert raw[off:second] == first + xxhash.xxh3_64_digest(first)
    assert raw[second:end] == tomb + xxhash.xxh3_64_digest(tomb)
    assert struct.unpack(">Q", raw[end - 8 : end])[0] == xxhash.xxh3_64_intdigest(tomb)


def log_bytes(log: AppendLog) -> bytes:
    with open(log.path, "rb") as fh:
        return fh.read()


def test_scan_entries_mirror_scan_without_payloads(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"x" * 100)
    log.append(RecordKind.PUT, "b", b"yy", timestamp=2.0, expiration=9.5, correlation_id=b"id")
    log.append_many(
        [(RecordKind.DELETE, "a", b"", 3.0, 0.0, b""), (RecordKind.EXPIRE, "b", b"", 4.0, 0.0, b"")]
    )
    for i in range(40):  # crosses slab boundaries
        put(log, f"k{i}", bytes([i]) * 150)
    entries = list(log.scan_entries())
    records = list(log.scan())
    ends = [rec.offset for rec in records[1:]] + [log.end_offset]
    assert entries == [(*rec[:7], end - rec.offset) for rec, end in zip(records, ends, strict=True)]
    assert [e[7] for e in entries] == [
        framed_size(r.key, len(r.correlation_id), len(r.payload), r.expiration) for r in records
    ]
    assert [e[1] for e in entries[:4]] == [
        RecordKind.PUT,
        RecordKind.PUT,
        RecordKind.DELETE,
        RecordKind.EXPIRE,
    ]
    assert entries[1][3:7] == (2.0, 9.5, "b", b"id")
    assert list(log.scan_entries(entries[2][0])) == entries[2:]
    assert list(log.scan_entries(log.end_offset)) == []


def test_scan_entries_follow_appends_made_while_suspended(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    it = log.scan_entries()
    assert next(it)[5] == "a"
    for i in range(30):
        put(log, f"k{i}", b"z" * 200)
    assert [e[5] for e in it] == [f"k{i}" for i in range(30)]


def test_scan_entries_reject_a_start_inside_a_record(new_log: Factory) -> None:
    log = new_log()
    rec = put(log, "a", b"payload")
    with pytest.raises(CorruptRecordError) as err:
        log.scan_entries(rec.offset + 8)
    assert err.value.offset == rec.offset + 8


def test_scan_entries_stop_when_the_log_is_compacted_or_closed(new_log: Factory) -> None:
    log = new_log()
    for i in range(3):
        put(log, f"k{i}", b"v")
    it = log.scan_entries()
    next(it)
    log.compact(lambda rec: True)
    with pytest.raises(StoreClosedError):
        list(it)
    it = log.scan_entries()
    next(it)
    log.close()
    with pytest.raises(StoreClosedError):
        next(it)


def test_append_many_with_a_bad_kind_writes_nothing(new_log: Factory) -> None:
    log = new_log()
    put(log, "a", b"1")
    end, seq = log.end_offset, log.last_seq
    with pytest.raises(UnsupportedOperationError):
        log.append_many([(RecordKind.PUT, "b", b"2", 1.0, 0.0, b""), (9, "c", b"3", 1.0, 0.0, b"")])  # type: ignore[list-item]
    assert (log.end_offset, log.last_seq, log.record_count) == (end, seq, 1)


def test_log_records_are_immutable_values(new_log: Factory) -> None:
    rec = put(new_log(), "a", bytearray(b"pay"))  # type: ignore[arg-type]
    assert type(rec.payload) is bytes
    assert rec == LogRecord(
        offset=rec.offset,
        kind=RecordKind.PUT,
        seq=1,
        timestamp=1_700_000_000.0,
        expiration=0.0,
        key="a",
        correlation_id=b"",
        payload=b"pay",
    )
    with pytest.raises(AttributeError):
        rec.key = "b"  # type: ignore[misc]
    assert rec._replace(key="b").key == "b"
    assert rec.key == "a"


@settings(max_examples=40)
@given(
    keys=st.lists(st.text(min_size=1, max_size=12), max_size=6),
    ts=st.integers(0, 2**50).map(lambda us: us / 1_000_000),
    exp=st.integers(0, 2**50).map(lambda us: us / 1_000_000),
    seq=st.integers(0, 2**40),
)
def test_put_batch_framing_equals_the_general_batch(
    keys: list[str], ts: float, exp: float, seq: int
) -> None:
    payloads = [key.encode() * 3 for key in keys]
    data, offsets, sizes = frame_puts(keys, payloads, ts, exp, seq, 64, 1 << 20)
    general, records = frame_batch(
        [(RecordKind.PUT, k, p, ts, exp, b"") for k, p in zip(keys, payloads, strict=True)],
        seq,
        64,
        1 << 20,
    )
    assert data == general
    assert offsets == [rec.offset for rec in records]
    assert sum(sizes) == len(data)


def test_append_puts_then_reopen(new_log: Factory) -> None:
    log = new_log()
    log.append(RecordKind.PUT, "a", b"first", timestamp=1.0)
    offsets, sizes, first = log.append_puts(["b", "c"], [b"x", b"yy"], 2.5, 9.0)
    assert first == 2
    assert [log.read(o).key for o in offsets] == ["b", "c"]
    assert log.read(offsets[1]) == LogRecord(
        offsets[1], RecordKind.PUT, 3, 2.5, 9.0, "c", b"", b"yy"
    )
    assert offsets[1] - offsets[0] == sizes[0]
    assert log.end_offset == offsets[1] + sizes[1]
    assert log.append_puts([], [], 3.0, 0.0) == ([], [], 4)
    path = log.path
    log.close()
    again = AppendLog(path)
    assert [r.key for r in again.scan()] == ["a", "b", "c"]
    assert again.last_seq == 3
    again.close()


def test_append_puts_rejects_an_oversized_record_whole(new_log: Factory) -> None:
    log = new_log(slab_size=4096)
    end = log.end_offset
    with pytest.raises(RecordTooLargeError):
        log.append_puts(["a", "b"], [b"ok", bytes(5000)], 1.0, 0.0)
    assert log.end_offset == end
    assert log.last_seq == 0


def test_compact_by_offsets_keeps_exactly_those_records(new_log: Factory) -> None:
    log = new_log()
    offsets, _, _ = log.append_puts(["a", "b", "c", "d"], [b"1", b"22", b"333", b"4444"], 1.0, 0.0)
    mapping = log.compact({offsets[3], offsets[1]})
    assert sorted(mapping) == [offsets[1], offsets[3]]
    assert [(r.key, r.payload) for r in log.scan()] == [("b", b"22"), ("d", b"4444")]
    assert log.read(mapping[offsets[3]]).payload == b"4444"
    with pytest.raises(CorruptRecordError):
        log.compact([log.end_offset + 8])
    assert [r.key for r in log.scan()] == ["b", "d"]


def test_memory_log_compacts_by_offsets_too() -> None:
    log = MemoryLog()
    offsets, _, _ = log.append_puts(["a", "b"], [b"1", b"2"], 1.0, 0.0)
    assert log.compact([offsets[1]]) == {offsets[1]: 0}
    assert [r.key for r in log.scan()] == ["b"]


@settings(max_examples=30)
@given(
    ints=st.lists(st.integers(0, 2**64 - 1), max_size=6),
    exp=st.sampled_from([0.0, 1234.5]),
)
def test_puts_with_integer_keys_equal_the_text_path(ints: list[int], exp: float) -> None:
    keys = [str(i) for i in ints]
    payloads = [k.encode() for k in keys]
    by_text = frame_puts(keys, payloads, 10.0, exp, 5, 64, 1 << 20)
    assert frame_puts(keys, payloads, 10.0, exp, 5, 64, 1 << 20, key_ints=ints) == by_text


def test_read_puts_gives_what_read_gives_for_every_record_shape(new_log: Factory) -> None:
    log = new_log()
    recs = [
        put(log, "12345", b"u64 key, nothing optional"),
        put(log, "k-text", b"text key"),
        log.append(RecordKind.PUT, "77", b"e", timestamp=2.0, expiration=9.5),
        log.append(RecordKind.PUT, "78", b"c", timestamp=3.0, correlation_id=b"corr"),
        put(log, "007", b"a leading zero is text"),
        put(log, "9", b""),
    ]
    batch, _sizes, _seq = log.append_puts(
        [str(i) for i in range(50)], [b"p" * i for i in range(50)], 4.0, 0.0
    )
    offsets = [*reversed(batch), *(r.offset for r in recs)]  # any order, repeats allowed
    offsets += offsets[:3]
    sizes = {r.offset: e[7] for r, e in zip(log.scan(), log.scan_entries(), strict=True)}
    expected = []
    for off in offsets:
        rec = log.read(off)
        expected.append(
            (rec.seq, rec.timestamp, rec.expiration, rec.correlation_id, sizes[off], rec.payload)
        )
    assert log.read_puts(offsets) == expected
    assert log.read_puts([]) == []


@pytest.mark.parametrize("where", ["payload", "checksum", "length"])
def test_read_puts_raises_for_a_damaged_record_and_names_it(
    new_log: Factory, log_path: Path, where: str
) -> None:
    log = new_log()
    good = put(log, "1", b"first payload")
    bad = put(log, "2", b"second payload")
    size = log.scan_entries(bad.offset).__next__()[7]
    log.flush()
    at = {"payload": bad.offset + 40, "checksum": bad.offset + size - 1, "length": bad.offset}[
        where
    ]
    with open(log_path, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0x04]))
    with pytest.raises(CorruptRecordError) as err:
        log.read_puts([good.offset, bad.offset])
    assert err.value.offset == bad.offset
    assert log.read_puts([good.offset])[0][5] == b"first payload"


def test_read_puts_rejects_offsets_that_are_not_record_starts(new_log: Factory) -> None:
    log = new_log()
    rec = put(log, "1", b"payload")
    for off in (rec.offset + 8, log.end_offset, 0, -1):
        with pytest.raises(CorruptRecordError) as err:
            log.read_puts([rec.offset, off])
        assert err.value.offset == off
