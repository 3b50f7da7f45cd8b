"""A compaction's check of the records it keeps: the C form agrees with the reference.

``compaction.kept_chunks`` (Python: ``kept_runs``, the runs' bytes joined) is the
reference; ``recordread.kept_chunks`` must give the same new offsets, chunks of bytes and
first damaged record for any records, damage, offsets and chunk size; the chunks hold the
runs' bytes back to back; and a compaction over a damaged kept record must stop with
``CorruptRecordError`` either way.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.errors import CorruptRecordError
from sowlib.storage import native
from sowlib.storage.compaction import copy_kept, kept_chunks, kept_runs
from sowlib.storage.format import RecordKind, encode_record

if os.environ.get("CI"):
    from sowlib.storage import recordread
else:
    recordread = pytest.importorskip("sowlib.storage.recordread")

PUT = int(RecordKind.PUT)

records = st.lists(
    st.tuples(st.binary(min_size=1, max_size=12), st.binary(max_size=300)), min_size=1, max_size=12
)


def _log(items: list[tuple[bytes, bytes]], lead: int) -> tuple[bytes, list[int]]:
    buf = bytearray(lead)
    offsets = []
    for seq, (key, payload) in enumerate(items, 1):
        offsets.append(len(buf))
        buf += encode_record(PUT, key, b"", payload, seq, seq * 1000, 0)
    return bytes(buf), offsets


def test_the_c_form_is_loaded_where_built() -> None:
    if not os.environ.get(native.PURE_PYTHON_ENV):
        assert native.NATIVE_KEPT_CHUNKS is recordread.kept_chunks


@settings(max_examples=300)
@given(
    items=records,
    lead=st.integers(min_value=0, max_value=64),
    keep=st.data(),
    chunk=st.integers(min_value=1, max_value=2000),
    first=st.integers(min_value=0, max_value=10_000),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=3),
    cut=st.integers(min_value=0, max_value=50),
)
def test_c_and_reference_agree(
    items: list[tuple[bytes, bytes]],
    lead: int,
    keep: st.DataObject,
    chunk: int,
    first: int,
    flips: list[tuple[int, int]],
    cut: int,
) -> None:
    buf, offsets = _log(items, lead)
    damaged = bytearray(buf)
    for at, bits in flips:
        damaged[at % len(damaged)] ^= bits
    kept = sorted(keep.draw(st.sets(st.sampled_from(offsets))))
    limit = max(0, len(buf) - cut)
    want = kept_chunks(bytes(damaged), kept, first, limit, chunk)
    assert recordread.kept_chunks(bytes(damaged), kept, first, limit, chunk) == want
    news, runs, bad = kept_runs(bytes(damaged), kept, first, limit, chunk)
    assert (want[0], want[2]) == (news, bad)
    assert b"".join(want[1]) == b"".join(damaged[start:end] for start, end in runs)
    assert all(len(c) >= chunk for c in want[1][:-1])  # only the last may be short
    if not flips and not cut:
        assert want[2] == -1  # intact records are all kept
        assert len(want[0]) == len(kept)


def test_offsets_outside_the_records_are_damage() -> None:
    buf, offsets = _log([(b"1", b"a"), (b"2", b"b")], 8)
    for check in (kept_chunks, recordread.kept_chunks):
        assert check(buf, [-1], 0, len(buf), 100)[2] == 0
        assert check(buf, [offsets[1], len(buf) - 2], 0, len(buf), 100)[2] == 1


@pytest.mark.parametrize("use_c", [False, True])
def test_copy_kept_copies_runs_and_stops_at_damage(use_c: bool) -> None:
    c_form = recordread.kept_chunks if use_c else None
    buf, offsets = _log([(b"%d" % i, b"x" * i) for i in range(1, 30)], 16)
    keep = offsets[::2] + offsets[5:9]
    keep = sorted(set(keep))
    mapping: dict[int, int] = {}
    out = b"".join(copy_kept(buf, keep, 100, mapping, len(buf), "f", c_form))
    assert list(mapping) == keep
    starts = list(mapping.values())
    assert starts[0] == 100
    ends = dict(zip(offsets, [*offsets[1:], len(buf)], strict=True))
    expected = b"".join(buf[o : ends[o]] for o in keep)
    assert out == expected
    assert [s - 100 for s in starts] == [expected.index(buf[o : o + 20]) for o in keep]
    damaged = bytearray(buf)
    damaged[keep[3] + 40] ^= 1
    mapping.clear()
    with pytest.raises(CorruptRecordError):
        b"".join(copy_kept(bytes(damaged), keep, 100, mapping, len(buf), "f", c_form))
    assert list(mapping) == keep[:3]
