"""The recovery walk that keeps columns (``storage.entries``) against its per-record reference.

``verify_entries`` must stop exactly where ``verify_entries_by_record`` stops and hand out
the same entries, on intact logs of every record form and on logs with damage anywhere
(flipped bytes, a torn tail, zeros, garbage); ``scan_columns`` must equal ``scan_entries``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import CorruptRecordError
from sowlib.storage import AppendLog, EntryList, MemoryLog, RecordKind
from sowlib.storage.format import encode_record
from sowlib.storage.walk import verify_entries, verify_entries_by_record

_START = 16  # records start after some header bytes the walk never reads

keys = st.one_of(
    st.integers(0, 2**64 - 1).map(lambda n: str(n).encode()),  # stored as a u64
    st.sampled_from([b"007", b"k", b"-1", "\u00e9".encode(), b"18446744073709551616"]),
)
records = st.builds(
    encode_record,
    kind=st.sampled_from([int(k) for k in RecordKind]),
    key=keys,
    correlation_id=st.one_of(st.just(b""), st.binary(max_size=6)),
    payload=st.binary(max_size=40),
    seq=st.integers(1, 2**40),
    timestamp_us=st.integers(0, 2**50),
    expiration_us=st.one_of(st.just(0), st.integers(1, 2**50)),
)
common = st.builds(
    encode_record,
    kind=st.just(int(RecordKind.PUT)),
    key=st.integers(0, 2**64 - 1).map(lambda n: str(n).encode()),
    correlation_id=st.just(b""),
    payload=st.binary(max_size=40),
    seq=st.integers(1, 2**40),
    timestamp_us=st.integers(0, 2**50),
    expiration_us=st.just(0),
)
logs = st.lists(st.one_of(common, common, records), max_size=12).map(
    lambda recs: b"\x00" * _START + b"".join(recs)
)


def both(buf: bytes, limit: int | None = None) -> None:
    limit = len(buf) if limit is None else limit
    end, last, entries = verify_entries(buf, _START, limit)
    ref_end, reference = verify_entries_by_record(buf, _START, limit)
    assert end == ref_end
    assert list(entries) == reference
    assert last == (reference[-1][0] if reference else 0)
    assert list(entries.sizes()) == [e[7] for e in reference]
    assert len(entries) == len(reference)


@settings(max_examples=300)
@given(logs)
def test_intact_logs_walk_as_the_reference(buf: bytes) -> None:
    both(buf)


@settings(max_examples=400)
@given(logs, st.data())
def test_damaged_logs_stop_where_the_reference_stops(buf: bytes, data: st.DataObject) -> None:
    if len(buf) == _START:
        buf += data.draw(st.binary(min_size=1, max_size=60))
    damaged = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(_START, len(buf) - 1))
        damaged[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(_START, len(buf)))
    tail = data.draw(st.sampled_from([b"", b"\x00" * 50, b"\xf5" * 9, bytes(range(60))]))
    both(bytes(damaged[:cut]) + tail)


@given(logs, st.integers(0, 80))
def test_a_limit_inside_the_records_stops_as_the_reference(buf: bytes, short: int) -> None:
    both(buf, max(_START, len(buf) - short))


def test_extend_and_append_keep_the_rows_in_order() -> None:
    recs = [encode_record(1, str(i).encode(), b"", b"p%d" % i, i + 1, 5, 0) for i in range(4)]
    other = encode_record(2, b"gone", b"", b"", 9, 5, 0)
    buf = b"\x00" * _START + b"".join(recs) + other
    split = _START + len(recs[0]) + len(recs[1])
    end, _last, entries = verify_entries(buf, _START, split)
    assert end == split
    _end, _last, more = verify_entries(buf, end, len(buf))
    entries.extend(more)
    assert list(entries) == verify_entries_by_record(buf, _START, len(buf))[1]
    assert list(entries)[-1][1] is RecordKind.DELETE
    first = next(iter(entries))
    entries.append(first)  # a row kept whole
    assert list(entries)[-1] == first
    assert list(entries.sizes()) == [e[7] for e in entries]


def test_clearing_ends_an_iteration() -> None:
    recs = [encode_record(1, str(i).encode(), b"", b"v", i + 1, 5, 0) for i in range(3)]
    buf = b"\x00" * _START + b"".join(recs)
    _end, _last, entries = verify_entries(buf, _START, len(buf))
    it = iter(entries)
    next(it)
    entries.clear()
    assert list(it) == []
    assert len(entries) == 0


def test_scan_columns_equal_scan_entries(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    log = AppendLog(path, meta=b"{}")
    for i in range(5):
        log.append(RecordKind.PUT, str(i), b"v%d" % i, timestamp=1.0)
    log.append(RecordKind.PUT, "x", b"w", timestamp=1.0, expiration=9.0, correlation_id=b"c")
    log.append(RecordKind.DELETE, "3", b"", timestamp=2.0)
    log.close()
    log = AppendLog(path)
    appended = log.append(RecordKind.PUT, "9", b"later", timestamp=3.0)  # after the open
    columns = log.scan_columns()
    assert isinstance(columns, EntryList)
    assert list(columns) == list(log.scan_entries())
    assert list(columns)[-1][0] == appended.offset
    assert list(log.scan_columns(columns.offsets[2])) == list(columns)[2:]
    with pytest.raises(CorruptRecordError):
        log.scan_columns(columns.offsets[1] + 3)
    log.close()
    memory = MemoryLog()
    memory.append(RecordKind.PUT, "a", b"1", timestamp=1.0)
    memory.append(RecordKind.DELETE, "a", b"", timestamp=2.0)
    assert list(memory.scan_columns()) == list(memory.scan_entries())
