"""The per-message PUT of a u64 key: the same bytes as the reference encoder and ``append``.

``framing.frame_put_u64`` frames a PUT with no expiration or correlation id;
``AppendLog.append_put`` writes it without making a ``LogRecord``. Both are held to
``format.encode_record`` (the reference) and to ``AppendLog.append`` of the key's text.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import ReadOnlyError, RecordTooLargeError, StoreClosedError
from sowlib.storage.format import HEAD_BYTES, encode_record
from sowlib.storage.framing import NATIVE_PUTS_U64, frame_one, frame_put_u64, puts_u64

from .conftest import SLAB, open_log, put


@settings(max_examples=200)
@given(
    key=st.integers(0, 2**64 - 1),
    payload=st.binary(max_size=300),
    stamp=st.floats(0, 4e9, allow_nan=False),
    seq=st.integers(1, 2**40),
)
def test_frame_put_u64_is_the_reference_encoding(
    key: int, payload: bytes, stamp: float, seq: int
) -> None:
    body, digest = frame_put_u64(key, payload, round(stamp * 1e6), seq, 1 << 20)
    want = encode_record(1, str(key).encode(), b"", payload, seq, round(stamp * 1e6), 0)
    assert body + digest == want
    assert frame_one(1, str(key), payload, stamp, 0.0, b"", seq, 0, 1 << 20)[0] == want


def test_frame_put_u64_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(RecordTooLargeError):
        frame_put_u64(1, b"x" * 100, 0, 1, 90)
    with pytest.raises(struct.error):
        frame_put_u64(2**64, b"x", 0, 1, 1 << 20)


@settings(max_examples=30, deadline=None)
@given(
    puts=st.lists(
        st.tuples(st.integers(0, 2**64 - 1), st.binary(max_size=900)), min_size=1, max_size=12
    )
)
def test_append_put_writes_what_append_writes(puts: list[tuple[int, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fast, ref = open_log(Path(tmp) / "a.sow"), open_log(Path(tmp) / "b.sow")
        first = fast.end_offset
        for i, (key, payload) in enumerate(puts):
            stamp = 1_700_000_000.0 + i / 3
            offset, size, seq = fast.append_put(key, payload, stamp)
            rec = put(ref, str(key), payload, stamp)
            assert (offset, seq) == (rec.offset, rec.seq)
            assert size == fast.end_offset - offset == ref.end_offset - rec.offset
        assert fast.mm is not None
        assert ref.mm is not None
        assert fast.end_offset == ref.end_offset  # crossed slabs alike (SLAB bytes)
        assert fast.mm[first : fast.end_offset] == ref.mm[first : ref.end_offset]
        fast.close()
        ref.close()
        again = open_log(Path(tmp) / "a.sow")
        assert [(r.key, r.payload) for r in again.scan()] == [(str(k), p) for k, p in puts]
        again.close()


def test_append_put_refuses_as_append_does(tmp_path: Path) -> None:
    log = open_log(tmp_path / "a.sow")
    with pytest.raises(RecordTooLargeError):
        log.append_put(1, b"x" * SLAB, 1.0)
    assert log.last_seq == 0
    log.append_put(1, b"x", 1.0)
    log.close()
    reader = open_log(tmp_path / "a.sow", readonly=True)
    with pytest.raises(ReadOnlyError):
        reader.append_put(2, b"y", 2.0)
    reader.close()
    with pytest.raises(StoreClosedError):
        log.append_put(3, b"z", 3.0)


def test_append_put_writes_its_first_bytes_last(tmp_path: Path) -> None:
    log = open_log(tmp_path / "a.sow")
    start, mm = log.end_offset, log.mm
    writes: list[tuple[int, int]] = []

    class Recording:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __setitem__(self, key: slice, value: bytes) -> None:
            writes.append((key.start, key.stop))
            self.inner[key] = value  # type: ignore[index]

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    log.mm = Recording(mm)  # type: ignore[assignment]
    _offset, size, _seq = log.append_put(7, b"p" * 40, 1.0)
    end = start + size
    # until the first bytes land, the record starts with zeros: a write in flight
    assert writes == [(start + HEAD_BYTES, end - 8), (end - 8, end), (start, start + HEAD_BYTES)]
    log.mm = mm
    log.close()


@settings(max_examples=200, deadline=None)
@given(
    puts=st.lists(st.tuples(st.integers(0, 2**64 - 1), st.binary(max_size=300)), max_size=20),
    stamp=st.floats(0, 4e9, allow_nan=False),
    expiration=st.one_of(st.just(0.0), st.floats(1, 4e9, allow_nan=False)),
    seq=st.integers(0, 2**40),
)
def test_batch_framing_in_c_is_the_reference(
    puts: list[tuple[int, bytes]], stamp: float, expiration: float, seq: int
) -> None:
    # publish_many's framing of u64 keys: the C form (framepack.c) against the Python
    # maps (native=None), and both against the reference encoder, record by record.
    keys, payloads = [k for k, _ in puts], [p for _, p in puts]
    want = puts_u64(keys, payloads, stamp, expiration, seq, native=None)
    if NATIVE_PUTS_U64 is not None:
        assert puts_u64(keys, payloads, stamp, expiration, seq) == want
    ts, exp = round(stamp * 1e6), round(expiration * 1e6) if expiration else 0
    expected = [
        encode_record(1, str(k).encode(), b"", p, seq + 1 + i, ts, exp)
        for i, (k, p) in enumerate(puts)
    ]
    assert want == (b"".join(expected), [len(r) for r in expected])


def test_batch_framing_refuses_what_the_reference_refuses() -> None:
    # A key beyond 64 bits: the reference path decides (frame_puts then frames the
    # batch the general way); a payload the C form does not take is framed by it too.
    for keys in ([2**64], [-1]):
        with pytest.raises(struct.error):
            puts_u64(keys, [b"x"], 1.0, 0.0, 0, native=None)
        with pytest.raises(struct.error):
            puts_u64(keys, [b"x"], 1.0, 0.0, 0)
    loose: list[bytes] = [bytearray(b"x")]  # type: ignore[list-item]
    assert puts_u64([1], loose, 1.0, 0.0, 0) == puts_u64([1], [b"x"], 1.0, 0.0, 0, native=None)
    with pytest.raises(ValueError):
        puts_u64([1, 2], [b"x"], 1.0, 0.0, 0)
    if NATIVE_PUTS_U64 is not None:
        with pytest.raises(TypeError):
            NATIVE_PUTS_U64((1,), [b"x"], 1, 0, 0)
