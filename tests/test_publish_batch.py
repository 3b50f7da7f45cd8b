"""``publish_many``: the batch path gives exactly what one ``publish`` per message gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.codecs import JsonCodec
from sowlib.errors import ArgumentError, DecodeError, MissingKeyFieldError
from sowlib.keys import ContentKeyGenerator
from sowlib.results import PublishResult, PublishResults
from sowlib.storage import MemoryLog
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import LogView

from .conftest import FakeClock


def state(topic: Any) -> list[tuple[str, bytes, int, float, float | None, Any]]:
    return sorted((r.sow_key, r.data, r.seq, r.timestamp, r.expiration, r.doc) for r in topic.sow())


messages = st.lists(
    st.builds(
        lambda i, px, text: json.dumps({"id": i, "px": px, "t": text}),
        st.integers(0, 6),
        st.integers(-5, 5),
        st.text(max_size=4),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(messages, max_size=4), as_bytes=st.booleans())
def test_batch_path_equals_one_publish_per_message(
    batches: list[list[str]], as_bytes: bool
) -> None:
    clock = FakeClock()
    with SowStore(clock=clock) as one, SowStore(clock=clock) as many:
        a = one.create_topic("t", keys=["/id"], indexes=["/px"])
        b = many.create_topic("t", keys=["/id"], indexes=["/px"])
        for batch in batches:
            payloads = [m.encode() for m in batch] if as_bytes else batch
            expected = [a.publish(m) for m in payloads]
            assert b.publish_many(payloads) == expected
            assert state(a) == state(b)
            # The memo index maintained alike: the same records (a query without
            # order_by names no order; a key moved out of a value and back within one
            # batch keeps its place there, where one publish at a time re-adds it last).
            assert sorted(a.sow("/px > 0"), key=repr) == sorted(b.sow("/px > 0"), key=repr)
            clock.advance(1.0)
        assert a.stats()["inserts"] == b.stats()["inserts"]
        assert a.stats()["updates"] == b.stats()["updates"]


def test_a_record_read_before_an_update_is_not_served_stale(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    first = t.publish_many(['{"id": 1, "v": "old"}', '{"id": 2, "v": "x"}'])
    assert t.get(first[0].sow_key).doc["v"] == "old"  # now cached
    t.publish_many(['{"id": 1, "v": "new"}'])
    assert t.get(first[0].sow_key).doc["v"] == "new"
    assert [r.doc["v"] for r in t.sow("/id = 1")] == ["new"]


def test_duplicate_keys_in_one_batch_keep_the_last(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    results = t.publish_many([b'{"id": 1, "v": 1}', b'{"id": 1, "v": 2}', b'{"id": 2}'])
    assert [r.inserted for r in results] == [True, False, True]
    assert [r.seq for r in results] == [1, 2, 3]
    assert len(t) == 2
    assert t.get(results[0].sow_key).doc == {"id": 1, "v": 2}


def test_batch_survives_reopen(tmp_path: Path) -> None:
    with SowStore(tmp_path) as store:
        t = store.create_topic("t", keys=["/id"], expiration="enabled")
        results = t.publish_many([f'{{"id": {i}}}' for i in range(50)], expiration=3600)
        before = state(t)
    with SowStore(tmp_path) as again:
        t = again.topic("t")
        assert state(t) == before
        rec = t.get(results[49].sow_key)
        assert rec is not None
        assert rec.expiration == before[0][4]


def test_batch_expiration_is_processed(any_store: Any, clock: FakeClock) -> None:
    t = any_store.create_topic("t", keys=["/id"], expiration="enabled")
    t.publish_many(['{"id": 1}', '{"id": 2}'], expiration=10)
    t.publish_many(['{"id": 3}'])
    clock.advance(11)
    assert [r.doc["id"] for r in t.sow()] == [3]


@pytest.mark.parametrize(
    ("bad", "error"),
    [('{"id": 9, "x": ', DecodeError), ("[1, 2]", DecodeError), ('{"x": 1}', MissingKeyFieldError)],
)
def test_one_bad_message_stores_nothing_and_names_itself(
    any_store: Any, bad: str, error: type[Exception]
) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    t.publish('{"id": 0}')
    with pytest.raises(error) as info:
        t.publish_many(['{"id": 1}', bad, '{"id": 2}'])
    assert info.value.data in (bad, bad.encode())  # type: ignore[attr-defined]
    assert len(t) == 1
    t.publish_many(['{"id": 3}'])
    assert t.stats()["publishes"] == 2


def test_big_integers_stay_exact_in_a_batch(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    big = 123456789012345678901234567890
    (result,) = t.publish_many([f'{{"id": 1, "big": {big}}}'])
    assert t.get(result.sow_key).doc["big"] == big


def test_mixed_inputs_and_iterators_take_the_general_path(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    results = t.publish_many(iter(['{"id": 1}', b'{"id": 2}', {"id": 3}]))
    assert [r.seq for r in results] == [1, 2, 3]
    assert sorted(r.doc["id"] for r in t.sow()) == [1, 2, 3]


def test_subscribers_see_every_message_of_a_batch(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    seen: list[Any] = []
    t.subscribe(seen.append)
    t.publish_many(['{"id": 1}', '{"id": 1, "v": 2}'])
    assert [m.doc for m in seen] == [{"id": 1}, {"id": 1, "v": 2}]


def test_publish_results_is_a_read_only_sequence() -> None:
    results = PublishResults(["a", "b", "c"], 10, [True, False, True])
    expected = [
        PublishResult("a", 10, True),
        PublishResult("b", 11, False),
        PublishResult("c", 12, True),
    ]
    assert len(results) == 3
    assert list(results) == expected
    assert results == expected
    assert results == tuple(expected)
    assert results != expected[:2]
    assert results[-1] == expected[2]
    assert results[1:] == expected[1:]
    assert "seq=11" in repr(results)
    with pytest.raises(IndexError):
        results[3]
    with pytest.raises(TypeError):
        hash(results)
    with pytest.raises(ValueError):
        PublishResults(["a"], 1, [])


json_texts = st.one_of(
    st.builds(
        json.dumps, st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3))
    ),
    st.sampled_from(
        ['{"a": 12345678901234567890123}', "[1]", '{"a": ', "1", '{"a": -9223372036854775809}']
    ),
)


@settings(max_examples=60)
@given(texts=st.lists(json_texts, max_size=5))
def test_decode_many_equals_decode_one_by_one(texts: list[str]) -> None:
    codec = JsonCodec()
    payloads = [t.encode() for t in texts]
    try:
        expected: Any = [codec.decode(p) for p in payloads]
    except DecodeError as exc:
        expected = (type(exc), exc.offset)
    try:
        got: Any = codec.decode_many(payloads)
    except DecodeError as exc:
        got = (type(exc), exc.offset)
    assert got == expected


key_values = st.one_of(
    st.integers(), st.text(max_size=4), st.booleans(), st.none(), st.floats(allow_nan=False)
)


@settings(max_examples=80)
@given(
    docs=st.lists(st.dictionaries(st.sampled_from(["id", "x"]), key_values), max_size=5),
    domain=st.sampled_from(["d", "100%", "a%db", "%%s"]),  # the batch path formats with %
)
def test_hashes_of_equal_the_generator_one_by_one(docs: list[dict[str, Any]], domain: str) -> None:
    gen = ContentKeyGenerator(["/id"], domain=domain, topic="t")
    try:
        expected: Any = [int(gen(d)) for d in docs]
    except MissingKeyFieldError:
        expected = MissingKeyFieldError
    try:
        got: Any = gen.hashes_of(docs)
    except MissingKeyFieldError:
        got = MissingKeyFieldError
    assert got == expected
    if expected is not MissingKeyFieldError:
        assert gen.keys_of(docs) == [gen(d) for d in docs]


@settings(max_examples=60)
@given(texts=st.lists(json_texts, max_size=5))
def test_top_values_are_none_or_what_decoding_gives(texts: list[str]) -> None:
    codec = JsonCodec()
    payloads = [t.encode() for t in texts]
    values = codec.top_values(payloads, "a")
    try:
        docs = [codec.decode(p) for p in payloads]
    except DecodeError:
        assert values is None
        return
    if all("a" in d for d in docs):
        assert values is None or values == [d["a"] for d in docs]
    else:
        assert values is None


def test_a_batch_with_a_missing_key_field_falls_back_and_names_the_message(any_store: Any) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    with pytest.raises(MissingKeyFieldError) as info:
        t.publish_many([b'{"id": 1}', b'{"idx": 2}'])
    assert info.value.data == b'{"idx": 2}'  # type: ignore[attr-defined]
    assert len(t) == 0


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(messages, max_size=5), reopen_after=st.integers(0, 5))
def test_unindexed_batches_with_repeated_keys_equal_one_publish_per_message(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[str]], reopen_after: int
) -> None:
    # No query runs before the end: the topic stays unindexed (the install that keeps
    # no documents); a clean reopen midway makes the replaced versions bare offsets.
    clock = FakeClock()
    path = tmp_path_factory.mktemp("many")
    one = SowStore(clock=clock)
    many = SowStore(path, clock=clock)
    try:
        a = one.create_topic("t", keys=["/id"])
        b = many.create_topic("t", keys=["/id"])
        for n, batch in enumerate(batches):
            if n == reopen_after:
                many.close()
                many = SowStore(path, clock=clock)
                b = many.topic("t")
            assert b.publish_many(batch) == [a.publish(m) for m in batch]
            for key in {a.key_for(m) for m in batch}:
                assert b.get(key) == a.get(key)
            if n < reopen_after:  # the counters start again at a reopen
                assert b.stats()["inserts"] == a.stats()["inserts"]
                assert b.stats()["updates"] == a.stats()["updates"]
            assert b.stats()["live_bytes"] == a.stats()["live_bytes"]
            b.check()
            clock.advance(1.0)
        assert state(a) == state(b)
    finally:
        one.close()
        many.close()


@pytest.mark.parametrize("domain", ["orders", "100%", "a%db", "%%s", "%"])
def test_batch_key_hashes_take_any_domain_text(domain: str) -> None:
    gen = ContentKeyGenerator(["/id"], domain=domain, topic="t")
    for values in ([1, -2, 10**30, 0], ["a", "5%", "é"]):
        docs = [{"id": v} for v in values]
        assert gen.hashes_of(docs) == [int(gen(d)) for d in docs]


keyed_rows = st.lists(
    st.tuples(
        st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "é", ""]), st.none()),
        st.integers(0, 9),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(keyed_rows, max_size=4), query_first=st.booleans())
def test_rendered_batches_with_key_values_equal_publish_many(
    batches: list[list[tuple[Any, int]]], query_first: bool
) -> None:
    # publish_many(key_values=) (the Spark sink's call) hashes the given values instead
    # of parsing the messages; whatever the values, the result is publish_many's.
    clock = FakeClock()
    with SowStore(clock=clock) as one, SowStore(clock=clock) as many:
        a = one.create_topic("t", keys=["/id"])
        b = many.create_topic("t", keys=["/id"])
        if query_first:  # an indexed topic keeps documents: the values are not used
            a.sow("/v > 1")
            b.sow("/v > 1")
        for batch in batches:
            payloads = [
                json.dumps({"v": v} if k is None else {"id": k, "v": v}).encode() for k, v in batch
            ]
            values = [k for k, _ in batch]
            try:
                expected: Any = a.publish_many(payloads)
            except MissingKeyFieldError as exc:
                expected = type(exc)
            try:
                got: Any = b.publish_many(payloads, key_values=values)
            except MissingKeyFieldError as exc:
                got = type(exc)
            assert got == expected
            assert state(a) == state(b)
            clock.advance(1.0)


def test_key_values_need_one_value_per_message_and_tuples_for_several_fields(
    any_store: Any,
) -> None:
    t = any_store.create_topic("t", keys=["/id"])
    with pytest.raises(ArgumentError):
        t.publish_many([b'{"id": 1, "v": 2}'], key_values=[1, 2])
    assert len(t) == 0
    other = any_store.create_topic("u", keys=["/a", "/b"])
    assert other.publish_many([b'{"a": 1, "b": 2}'], key_values=[(1, 2)])[0].inserted
    assert other.get(other.key_for('{"a": 1, "b": 2}')) is not None
    assert other.lookup(1, 2) == other.get(other.key_for('{"a": 1, "b": 2}'))


@settings(max_examples=150, deadline=None)
@given(
    start=st.dictionaries(st.integers(0, 30), st.integers(40, 400), max_size=20),
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 40), st.integers(40, 400)), max_size=30), max_size=4
    ),
    content=st.booleans(),
)
def test_key_map_batch_puts_equal_one_put_at_a_time(
    start: dict[int, int], batches: list[list[tuple[int, int]]], content: bool
) -> None:
    # put_bare (C-level passes, repeated keys included) against put_bare_each.
    view = LogView(MemoryLog())
    fast, each = KeyMap(view, content=content), KeyMap(view, content=content)
    for keymap in (fast, each):
        keymap.put_bare_each(list(start), list(range(len(start))), list(start.values()))
    offset = len(start)
    for batch in batches:
        keys: list[int | str] = [k for k, _ in batch]
        sizes = [s for _, s in batch]
        offsets = list(range(offset, offset + len(batch)))
        offset += len(batch)
        assert fast.put_bare(keys, offsets, sizes) == each.put_bare_each(keys, offsets, sizes)
        assert fast.keys() == each.keys()
        assert fast.offsets() == each.offsets()
        assert fast.live_bytes == each.live_bytes
        assert [fast.size(k) for k in fast] == [each.size(k) for k in each]


# Documents the one-pass read of the index fields meets: plain ones it reads, and ones it
# leaves to decoding (an escape, a nested value, a missing field, a float key, a NULL).
_FIELD = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["A", "B", 'a"b', "\u00e9", "", None, True, [1], {"x": 1}]),
)
_INDEXED_DOCS = st.fixed_dictionaries(
    {"id": st.one_of(st.integers(0, 6), st.integers(0, 6), st.sampled_from(["k", 1.5, None]))},
    optional={"sym": _FIELD, "px": _FIELD, "other": _FIELD},
)


@settings(max_examples=120, deadline=None)
@given(batches=st.lists(st.lists(_INDEXED_DOCS, max_size=10), max_size=4))
def test_index_fields_read_out_of_the_payloads_equal_decoding(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[dict[str, Any]]]
) -> None:
    # publish_many of an indexed, content-keyed topic reads the key and index fields out
    # of the bytes when nothing needs the documents: the same records, indexes and
    # errors as one publish per message.
    clock = FakeClock()
    base = tmp_path_factory.mktemp("fields")
    options: dict[str, Any] = {"keys": ["/id"], "hash_indexes": [["/sym"]], "indexes": ["/px"]}
    with SowStore(base / "one", clock=clock) as one, SowStore(base / "many", clock=clock) as many:
        a, b = one.create_topic("t", **options), many.create_topic("t", **options)
        for docs in batches:
            payloads = [json.dumps(d).encode() for d in docs]
            if any(d["id"] is None for d in docs):  # a NULL key: nothing of the batch stored
                before = state(b)
                with pytest.raises(MissingKeyFieldError):
                    b.publish_many(payloads)
                assert state(b) == before
                return
            expected = [a.publish(m) for m in payloads]
            assert b.publish_many(payloads) == expected
            assert state(a) == state(b)
            for query in ("/sym = 'A'", "/px > 0", "/px < 1.5", "/sym IS NULL"):
                assert sorted(a.sow(query), key=repr) == sorted(b.sow(query), key=repr)
            clock.advance(1.0)
