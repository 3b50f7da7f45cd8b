"""The C reader of the common PUT record agrees with the Python reference.

``sowlib.storage.recordread`` (built where a compiler is found) must give exactly
what ``walk.read_put`` gives for an intact PUT with a u64 key and nothing optional,
and None for everything else, never a wrong answer or a crash, whatever the bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import CorruptRecordError
from sowlib.storage import native, reader
from sowlib.storage.format import HEAD_U64, RECORD_MARKER, RecordKind, encode_record, u64_key
from sowlib.storage.walk import read_put

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


@pytest.fixture(autouse=True, params=["direct digest", "digest through xxhash"])
def digest_route(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test runs with XXH3_64bits called directly (where found) and through xxhash."""
    on = recordread.set_direct_digest(request.param == "direct digest")
    if request.param == "direct digest" and os.environ.get("CI"):
        assert on, "XXH3_64bits was not found in the xxhash package's module"
    yield
    recordread.set_direct_digest(True)


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


def test_a_topic_reads_the_same_with_and_without_the_c_form(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SowStore(str(tmp_path), cache_bytes=0)
    orders = store.create_topic("orders", keys=["/id"])
    for i in range(200):
        orders.publish(
            f'{{"id": {i}, "px": {i * 3}}}',
            expiration=3600 if i % 7 == 0 else None,
            correlation_id=f"c{i}" if i % 5 == 0 else None,
        )
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
