"""``publish`` and ``delta_publish`` without options: the common path = the reference path.

``Writer.write_bytes`` (taken for ``bytes`` with no ``sow_key``, expiration or correlation
id on a topic with content keys, in a file) must store exactly what the
reference path stores (``decode_input``, ``key``, ``write``), which a ``bytearray`` of the
same message takes. Both are run over the same messages, and the topics compared: records,
results, errors, counters, every index and the values kept for them, after a reopen too.
``delta_publish`` takes ``Writer.put_plain`` the same way; with a subscriber it takes the
reference path (``Writer.write``).
"""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import SowError
from sowlib.index.persist import index_snapshot

from .conftest import FakeClock

MISSING = object()
ids = st.one_of(
    st.integers(0, 5),
    st.sampled_from([2**64 + 1, -7, "a", "05", "5", "", 1.0, 2.5, True, None, [1], MISSING]),
)
values = st.one_of(
    st.sampled_from(["SYM1", "SYM2", "05", "5", "é", "", 1, 5, 1.0, 2.5, -0.0, True, None]),
    st.sampled_from([[1, 2], {"a": 1}, 2**70, float("nan"), MISSING]),
    st.integers(-3, 3),
)


def _message(key: Any, sym: Any, px: Any) -> bytes:
    doc = {"id": key, "sym": sym, "px": px, "n": 1}
    return json.dumps({k: v for k, v in doc.items() if v is not MISSING}).encode()


bad = st.sampled_from([b'{"id": 1, "px": ', b"[1]", b'{"x": 1}', b'{"id": 1, "px": NaN}'])
messages = st.lists(
    st.one_of(st.builds(_message, ids, values, values), bad), min_size=1, max_size=25
)

CONFIGS: list[dict[str, Any]] = [
    {"hash_indexes": [["/sym"]], "indexes": ["/px"]},
    {},
    {"hash_indexes": [["/sym", "/px"]]},
    {"indexes": ["/px", "/sym"]},
    {"hash_indexes": [["/id"]], "indexes": ["/id"]},
    {"keys": ["/id", "/sym"], "indexes": ["/px"]},  # compound: hashed by the generator
]


def _publish(topic: Any, message: bytes | bytearray) -> Any:
    try:
        return topic.publish(message)
    except SowError as exc:  # the message named as given: compare the text before it
        text = str(exc)
        return (type(exc), text[: min(text.find(c) % (len(text) + 1) for c in ("b'", "bytea"))])


def _state(topic: Any) -> Any:
    records = sorted((r.sow_key, r.data, r.seq, r.timestamp, r.doc) for r in topic.sow())
    indexes = topic.indexes
    snapshot = index_snapshot(indexes)
    kept = [(str(path), sorted(table.items())) for path, table in indexes.kept_tables()]
    queries = [
        sorted(r.sow_key for r in topic.sow(f))
        for f in ("/px > 0", "/px = 1", "/sym = 'SYM1'", "/sym = '5'", "/id = 1", "/px IS NULL")
    ]
    stats = {k: topic.stats()[k] for k in ("inserts", "updates", "publishes")}
    irregular = sorted(map(str, indexes.irregular))
    return records, snapshot, kept, irregular, indexes.live, queries, stats


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=12, deadline=None)
@given(batch=messages)
def test_common_path_equals_reference_path(config: dict[str, Any], batch: list[bytes]) -> None:
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as fast_dir, tempfile.TemporaryDirectory() as ref_dir:
        with SowStore(fast_dir, clock=clock) as fast, SowStore(ref_dir, clock=clock) as ref:
            a = fast.create_topic("t", **{"keys": ["/id"], **config})
            b = ref.create_topic("t", **{"keys": ["/id"], **config})
            for message in batch:
                assert _publish(a, message) == _publish(b, bytearray(message))
                clock.advance(0.5)
            assert _state(a) == _state(b)
        with SowStore(fast_dir, clock=clock) as fast, SowStore(ref_dir, clock=clock) as ref:
            assert _state(fast.topic("t")) == _state(ref.topic("t"))


def test_the_common_path_is_taken_and_declines_what_it_does_not_cover(tmp_path: Any) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/p"])
        writer = topic._p.writer
        first = writer.write_bytes(b'{"id": 1, "s": "a", "p": 2}')
        assert first is not None
        assert (first.inserted, first.seq) == (True, 1)
        again = writer.write_bytes(b'{"id": 1, "s": "b", "p": 3}')
        assert again is not None
        assert (again.inserted, again.sow_key) == (False, first.sow_key)
        assert [r.doc["s"] for r in topic.sow("/s = 'b' AND /p = 3")] == ["b"]
        got: list[Any] = []
        sub = topic.subscribe(got.append, "/p > 0")
        assert writer.write_bytes(b'{"id": 2, "s": "c", "p": 4}') is None  # a subscriber
        topic.publish(b'{"id": 2, "s": "c", "p": 4}')
        assert [m.data for m in got] == [b'{"id": 2, "s": "c", "p": 4}']
        sub.unsubscribe()
        assert writer.write_bytes(b'{"id": 3, "s": "c", "p": 4}') is not None
        compound = store.create_topic("c", keys=["/id", "/s"])
        assert compound._p.writer.write_bytes(b'{"id": 1, "s": "a"}') is not None
        assert len(compound.sow("/id = 1 AND /s = 'a'")) == 1
        named = store.create_topic("n")  # publisher-supplied keys
        assert named._p.writer.write_bytes(b'{"id": 1}') is None
    memory = SowStore().create_topic("m", keys=["/id"])
    assert memory._p.writer.write_bytes(b'{"id": 1}') is None  # no log file


def test_default_expiration_and_history_take_the_reference_path(tmp_path: Any) -> None:
    clock = FakeClock()
    with SowStore(tmp_path / "s", clock=clock) as store:
        ttl = store.create_topic("e", keys=["/id"], expiration=5)
        assert ttl._p.writer.write_bytes(b'{"id": 1}') is None
        result = ttl.publish(b'{"id": 1}')
        clock.advance(6)
        assert ttl.get(result.sow_key) is None
        kept = store.create_topic("h", keys=["/id"], history=3600)
        assert kept._p.writer.write_bytes(b'{"id": 1}') is None
        first = kept.publish(b'{"id": 1, "v": 1}')
        clock.advance(1)
        kept.publish(b'{"id": 1, "v": 2}')
        assert [r.doc["v"] for r in kept.sow(bookmark=first.seq)] == [1]


deltas = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.dictionaries(
            st.sampled_from(["sym", "px", "n", "o"]),
            st.one_of(values, st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 2))),
            max_size=3,
        ),
        st.sampled_from([None, None, "c1"]),
    ),
    min_size=1,
    max_size=20,
)


@pytest.mark.parametrize("config", CONFIGS[:2])
@settings(max_examples=15, deadline=None)
@given(steps=deltas)
def test_delta_common_path_equals_reference_path(
    config: dict[str, Any], steps: list[tuple[int, dict[str, Any], str | None]]
) -> None:
    clock = FakeClock()
    with (
        tempfile.TemporaryDirectory() as fast_dir,
        tempfile.TemporaryDirectory() as ref_dir,
        SowStore(fast_dir, clock=clock) as fast,
        SowStore(ref_dir, clock=clock) as ref,
    ):
        a = fast.create_topic("t", keys=["/id"], **config)
        b = ref.create_topic("t", keys=["/id"], **config)
        b.subscribe(lambda message: None)  # a subscriber: the reference path
        for key, fields, corr in steps:
            doc = {"id": key, **{k: v for k, v in fields.items() if v is not MISSING}}
            message = json.dumps(doc).encode()
            try:
                got: Any = a.delta_publish(message, correlation_id=corr)
            except SowError as exc:
                got = (type(exc), str(exc))
            try:
                want: Any = b.delta_publish(message, correlation_id=corr)
            except SowError as exc:
                want = (type(exc), str(exc))
            assert got == want
            clock.advance(0.25)
        assert _state(a) == _state(b)
        assert [r.correlation_id for r in a.sow()] == [r.correlation_id for r in b.sow()]


@settings(max_examples=100, deadline=None)
@given(value=st.one_of(st.integers(), st.text(min_size=1), st.floats(allow_nan=False)))
def test_the_int_key_shortcut_hashes_as_the_generator(value: Any) -> None:
    with SowStore() as store:
        for name, keys in (("a", ["/id"]), ("b", ["/id", "/x"])):
            writer = store.create_topic(name, keys=keys)._p.writer
            doc = {"id": value, "x": 1}
            assert writer.content is not None
            assert writer.key(doc, None, doc) == writer.content.hashes_of((doc,))[0]
