"""The C reader of the common PUT record agrees with the Python reference.

``sowlib.storage.recordread`` (built where a compiler is found) must give exactly
what ``walk.read_put`` gives for an intact PUT with a u64 key and nothing optional,
and None for everything else, never a wrong answer or a crash, whatever the bytes.
"""

from __future__ import annotations

import array
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import CorruptRecordError
from sowlib.storage import native, reader
from sowlib.storage.entries import NATIVE_TAIL_RUN, EntryList, common_run, tail_run, verify_columns
from sowlib.storage.format import HEAD_U64, RECORD_MARKER, RecordKind, encode_record, u64_key
from sowlib.storage.reader import SEAL
from sowlib.storage.walk import put_payloads, read_put
from sowlib.topic import logview

if os.environ.get("CI"):
    # CI machines have a compiler: there the C form must have been built.
    from sowlib.storage import recordread
else:
    recordread = pytest.importorskip("sowlib.storage.recordread")

PUT = int(RecordKind.PUT)

keys = st.integers(min_value=0, max_value=2**64 - 1).map(lambda n: str(n).encode())
payloads = st.binary(max_size=600)
seqs = st.integers(min_value=0, max_value=2**63 - 1)
stamps = st.integers(min_value=-(2**62), max_value=2**62)


def reference(buf: bytes, off: int, limit: int) -> tuple[object, ...] | None:
    """The Python read, or None where it finds no intact record."""
    try:
        return read_put(buf, off, limit, "f")
    except CorruptRecordError:
        return None


def test_the_c_form_is_built_where_ci_runs() -> None:
    # CI machines have a compiler: there the fast path must be the one under test.
    if os.environ.get("CI") and not os.environ.get(native.PURE_PYTHON_ENV):
        assert native.NATIVE_READ_PUT is recordread.read_put


def test_the_c_form_uses_the_format_constants() -> None:
    assert HEAD_U64.size == recordread.HEAD_SIZE
    assert recordread.MARKER == RECORD_MARKER
    assert recordread.KIND_BYTE == PUT | 0x40
    rec = encode_record(PUT, b"7", b"", b"xyz", 1, 2, 0)
    assert len(rec) - 3 == recordread.OVERHEAD


@given(key=keys, payload=payloads, seq=seqs, stamp=stamps, lead=st.binary(max_size=40))
def test_an_intact_common_record_reads_as_the_reference(
    key: bytes, payload: bytes, seq: int, stamp: int, lead: bytes
) -> None:
    rec = encode_record(PUT, key, b"", payload, seq, stamp, 0)
    buf = lead + rec + b"\x00" * 3
    got = recordread.read_put(buf, len(lead), len(lead) + len(rec))
    assert got is not None
    assert got == reference(buf, len(lead), len(lead) + len(rec))


@settings(max_examples=300)
@given(
    key=keys,
    payload=payloads,
    seq=seqs,
    stamp=stamps,
    where=st.integers(min_value=0),
    bit=st.integers(min_value=0, max_value=7),
    cut=st.integers(min_value=0, max_value=50),
)
def test_damage_never_reads_as_something_else(
    key: bytes, payload: bytes, seq: int, stamp: int, where: int, bit: int, cut: int
) -> None:
    rec = bytearray(encode_record(PUT, key, b"", payload, seq, stamp, 0))
    rec[where % len(rec)] ^= 1 << bit
    buf = bytes(rec)
    for limit in (len(buf), max(0, len(buf) - cut), len(buf) + cut):
        got = recordread.read_put(buf, 0, limit)
        assert got is None or got == reference(buf, 0, limit)


@example(kind=RecordKind.PUT, key=b"00", corr=b"", expiration=0, payload=b"{}")  # a text key
@given(
    kind=st.sampled_from([RecordKind.DELETE, RecordKind.EXPIRE, RecordKind.PUT]),
    key=st.one_of(keys, st.text(min_size=1, max_size=20).map(str.encode)),
    corr=st.binary(max_size=8),
    expiration=st.integers(min_value=0, max_value=2**40),
    payload=payloads,
)
def test_other_shapes_are_left_to_the_reference(
    kind: RecordKind, key: bytes, corr: bytes, expiration: int, payload: bytes
) -> None:
    rec = encode_record(int(kind), key, corr, payload, 5, 6, expiration)
    got = recordread.read_put(rec, 0, len(rec))
    want = reference(rec, 0, len(rec))
    assert got is None or got == want
    common = kind is RecordKind.PUT and u64_key(key) is not None and not corr and not expiration
    if want is not None and common:
        assert got == want


@given(buf=st.binary(max_size=200), off=st.integers(-5, 250), limit=st.integers(-5, 250))
def test_any_bytes_and_offsets_read_as_none_or_the_reference(
    buf: bytes, off: int, limit: int
) -> None:
    got = recordread.read_put(buf, off, limit)
    assert got is None or got == reference(buf, off, min(limit, len(buf)))


def test_bad_arguments_raise_type_errors() -> None:
    with pytest.raises(TypeError):
        recordread.read_put(b"")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        recordread.read_put("text", 0, 4)  # type: ignore[arg-type]


def _publish_mixed(topic: Any, docs: list[dict[str, Any]]) -> None:
    """Publish ``docs``, some with an expiration or a correlation id (records of other
    shapes than the common one)."""
    for i, doc in enumerate(docs):
        topic.publish(
            doc,
            expiration=3600 if i % 7 == 0 else None,
            correlation_id=f"c{i}" if i % 5 == 0 else None,
        )


def test_a_topic_reads_the_same_with_and_without_the_c_form(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SowStore(str(tmp_path), cache_bytes=0)
    orders = store.create_topic("orders", keys=["/id"])
    _publish_mixed(orders, [{"id": i, "px": i * 3} for i in range(200)])
    orders.publish('{"id": 3, "px": -1}')
    keys = [orders.key_for({"id": i}) for i in range(205)]

    def reads() -> list[object]:
        return [
            [orders.lookup(i) for i in range(205)],
            [orders.get(k) for k in keys],
            sorted(orders.sow("/px >= 0"), key=lambda r: r.sow_key),
        ]

    with_c = reads()
    monkeypatch.setattr(reader, "NATIVE_READ_PUT", None)
    assert reads() == with_c
    store.close()


records = st.lists(
    st.tuples(
        st.sampled_from([RecordKind.PUT, RecordKind.PUT, RecordKind.DELETE]),
        st.one_of(keys, st.text(min_size=1, max_size=12).map(str.encode)),
        st.sampled_from([b"", b"corr"]),
        st.sampled_from([0, 2**40]),
        payloads,
    ),
    min_size=1,
    max_size=12,
)


def _log(recs: list[tuple[RecordKind, bytes, bytes, int, bytes]]) -> tuple[bytes, list[int]]:
    """The records framed one after another, and the offsets of the PUTs."""
    buf, puts = b"", []
    for seq, (kind, key, corr, expiration, payload) in enumerate(recs):
        if kind is RecordKind.PUT:
            puts.append(len(buf))
        buf += encode_record(int(kind), key, corr, payload, seq, seq * 10, expiration)
    return buf, puts


@given(recs=records, pick=st.data())
def test_the_payloads_of_intact_puts_read_as_the_reference(
    recs: list[tuple[RecordKind, bytes, bytes, int, bytes]], pick: st.DataObject
) -> None:
    buf, puts = _log(recs)
    chosen = sorted(pick.draw(st.sets(st.sampled_from(puts)))) if puts else []
    got = recordread.put_payloads(buf, chosen, len(buf))
    assert got is not None
    assert got == put_payloads(buf, chosen, len(buf))
    assert got == [read_put(buf, off, len(buf), "f")[5] for off in chosen]


@settings(max_examples=300)
@given(
    recs=records,
    where=st.integers(min_value=0),
    bit=st.integers(0, 7),
    cut=st.integers(0, 60),
    extra=st.lists(st.integers(-5, 2000), max_size=3),
)
def test_payloads_of_damaged_or_foreign_offsets_are_none_or_the_reference(
    recs: list[tuple[RecordKind, bytes, bytes, int, bytes]],
    where: int,
    bit: int,
    cut: int,
    extra: list[int],
) -> None:
    buf, puts = _log(recs)
    damaged = bytearray(buf)
    damaged[where % len(damaged)] ^= 1 << bit
    offsets = sorted({*puts, *(e for e in extra if e >= 0)})
    for limit in (len(buf), max(0, len(buf) - cut)):
        got = recordread.put_payloads(bytes(damaged), offsets, limit)
        assert got is None or got == put_payloads(bytes(damaged), offsets, limit)
    assert recordread.put_payloads(buf, [-1], len(buf)) is None


def test_put_payloads_takes_a_list_of_ints() -> None:
    with pytest.raises(TypeError):
        recordread.put_payloads(b"", (0,), 4)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        recordread.put_payloads(b"", ["0"], 4)  # type: ignore[list-item]
    assert recordread.put_payloads(b"", [], 0) == []


def test_a_crash_reopen_files_the_same_indexes_with_and_without_the_c_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        orders = store.create_topic("orders", keys=["/id"], hash_indexes=[["/g"]], indexes=["/px"])
        _publish_mixed(orders, [{"id": i % 250, "g": f"g{i % 7}", "px": i} for i in range(300)])
        orders.sow_delete("/px < 20")
        path = orders.path
        shutil.copyfile(path, path + ".image")  # what a killed writer leaves
    os.replace(path + ".image", path)
    os.unlink(path + ".ckpt")

    def reopen(name: str) -> list[object]:
        shutil.copytree(tmp_path / "s", tmp_path / name)
        with SowStore(str(tmp_path / name)) as store:
            topic = store.topic("orders")
            topic.check()  # the indexes equal indexes rebuilt record by record
            return [
                sorted(r.data for r in topic.sow(flt))
                for flt in ("/g = 'g3'", "/px BETWEEN 100 AND 200", "/px > 0")
            ]

    with_c = reopen("with_c")
    monkeypatch.setattr(logview, "_put_payloads", put_payloads)
    assert reopen("reference") == with_c


common_records = st.lists(
    st.tuples(
        st.sampled_from([RecordKind.PUT] * 6 + [RecordKind.DELETE]),
        st.one_of(keys, keys, st.just(b"00")),
        st.sampled_from([b""] * 5 + [b"c"]),
        st.sampled_from([0] * 5 + [2**40]),
        payloads,
    ),
    min_size=0,
    max_size=20,
)


@settings(max_examples=300)
@given(
    recs=common_records,
    start=st.integers(-3, 3000),
    cut=st.integers(0, 80),
    flip=st.one_of(st.none(), st.tuples(st.integers(min_value=0), st.integers(0, 7))),
)
def test_the_c_walk_of_common_records_stops_where_the_reference_stops(
    recs: list[tuple[RecordKind, bytes, bytes, int, bytes]],
    start: int,
    cut: int,
    flip: tuple[int, int] | None,
) -> None:
    buf = bytearray(_log(recs)[0])
    if flip is not None and buf:
        buf[flip[0] % len(buf)] ^= 1 << flip[1]
    data = bytes(buf)
    for begin in (0, start):
        for limit in (len(data), max(0, len(data) - cut)):
            want = EntryList(data)
            end = common_run(data, max(begin, 0), limit, want) if begin >= 0 else begin
            got_end, packed, words = recordread.common_run(data, begin, limit)
            got = array.array("q")
            got.frombytes(packed)
            assert (got_end, list(got), words) == (end, list(want.offsets), want.words)


@settings(max_examples=300)
@given(
    recs=common_records,
    start=st.integers(-3, 3000),
    cut=st.integers(0, 80),
    pad=st.sampled_from([0, 2, 4, 64]),
    tail=st.sampled_from([b"", b"\x01", SEAL]),
    flip=st.one_of(st.none(), st.tuples(st.integers(min_value=0), st.integers(0, 7))),
)
def test_the_c_tail_run_agrees_with_its_reference(
    recs: list[tuple[RecordKind, bytes, bytes, int, bytes]],
    start: int,
    cut: int,
    pad: int,
    tail: bytes,
    flip: tuple[int, int] | None,
) -> None:
    """A refresh's common case in one call: a run of common records followed by a zero
    length (zeros to the end, as a log's unwritten part); that zero length at the
    offset itself, ``()``; anything else (no run, a record of another form after it, a
    SEAL, bytes cut short, a flipped bit) is None, and when it is not, what the
    recovery walk takes from the same offset."""
    buf = bytearray(_log(recs)[0] + tail + bytes(pad))
    if flip is not None and buf:
        buf[flip[0] % len(buf)] ^= 1 << flip[1]
    data = bytes(buf)
    for begin in (0, start):
        for limit in (len(data), max(0, len(data) - cut)):
            want = tail_run(data, begin, limit) if begin >= 0 else None
            assert recordread.tail_run(data, begin, limit) == want
            if want == ():  # nothing written at begin: the walk finds nothing there
                assert not verify_columns(data, begin, limit)[1]
            elif want:
                end, entries = verify_columns(data, begin, limit)
                assert (end, entries.offsets.tolist(), entries.words) == want[:3]
                assert want[3] == entries.sizes().tolist()
                assert want[4] == entries.seq_at(len(entries) - 1)
                assert want[5] == put_payloads(data, want[1], limit)


def test_a_tail_run_needs_room_for_the_zero_after_it() -> None:
    rec = encode_record(PUT, b"7", b"", b"{}", 1, 2, 0)
    assert tail_run(rec, 0, len(rec)) is None  # the map ends before a length could be read
    assert tail_run(rec + bytes(3), 0, len(rec) + 3) is None
    run = tail_run(rec + bytes(4), 0, len(rec) + 4)
    assert run == (len(rec), [0], [7], [len(rec)], 1, [b"{}"])
    assert NATIVE_TAIL_RUN is None or NATIVE_TAIL_RUN(rec + bytes(4), 0, len(rec) + 4) == run


def test_a_tail_run_at_a_zero_length_is_nothing_new() -> None:
    """Nothing written at the offset (a zero length wholly in the bytes): an empty tuple,
    from both forms; a length cut off by the limit stays None (the file is looked at)."""
    rec = encode_record(PUT, b"7", b"", b"{}", 1, 2, 0)
    buf = rec + bytes(8)
    forms = [tail_run] + ([] if NATIVE_TAIL_RUN is None else [NATIVE_TAIL_RUN])
    for form in forms:
        assert form(buf, len(rec), len(buf)) == ()
        assert form(buf, len(rec) + 4, len(buf)) == ()
        assert form(buf, len(rec) + 5, len(buf)) is None  # not four bytes left
        assert form(buf, len(rec), len(rec) + 3) is None
        assert form(buf, len(rec), len(rec) + 100) == ()  # the limit is the bytes' end
        assert form(buf, 0, len(buf)) == (len(rec), [0], [7], [len(rec)], 1, [b"{}"])


def test_the_pure_python_setting_turns_the_c_forms_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    loaders = (
        native.load_native_read_put,
        native.load_native_put_payloads,
        native.load_native_common_run,
    )
    assert [load() for load in loaders] == [None, None, None]
    monkeypatch.delenv(native.PURE_PYTHON_ENV)
    assert [load() for load in loaders] == [
        recordread.read_put,
        recordread.put_payloads,
        recordread.common_run,
    ]


def test_a_batch_is_checked_against_the_keys_the_key_map_expects() -> None:
    rec = encode_record(PUT, b"42", b"", b"{}", 1, 2, 0)
    buf = rec + rec
    assert logview._ends_match(buf, [0, len(rec)], [42, 42])
    assert not logview._ends_match(buf, [0, len(rec)], [42, 43])
    # A header cut off by the end of the bytes is not the record: the checked read follows.
    assert not logview._ends_match(buf[:-40], [0, len(rec)], [42, 42])


def test_a_run_list_grown_no_longer_claims_to_be_only_the_run() -> None:
    rec = encode_record(PUT, b"7", b"", b"{}", 1, 2, 0)
    other = encode_record(PUT, b"x", b"", b"{}", 2, 2, 0)
    buf = rec + other + bytes(4)
    run = tail_run(rec + bytes(4), 0, len(rec) + 4)
    assert run
    entries = EntryList.of_run(buf, run)
    assert entries.plain is run
    assert len(entries) == 1
    assert [e[5] for e in entries] == ["7"]
    _end, more = verify_columns(buf, len(rec), len(buf))
    entries.extend(more)
    assert entries.plain is None
    assert [e[5] for e in entries] == ["7", "x"]
