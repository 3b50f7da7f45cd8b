"""Index upkeep from kept values agrees with upkeep from old documents.

``IndexSet.on_put`` (the old version's values read from its document) is the reference;
``put_values`` (one key at a time, old values kept in memory) and ``put_columns`` (a batch
a column at a time) must leave every index, the key-field bookkeeping and the kept values
in the same state, whatever the values and however keys repeat within a batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.document import MISSING
from sowlib.index import IndexSet
from sowlib.index.persist import dump_indexes, index_snapshot, load_indexes
from sowlib.index.upkeep import ABSENT, Table, changes
from sowlib.index.values import KeyGroups
from sowlib.topic.slots import new_table

_SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**70, 1.0, 2.5, math.nan, True, False, None, "", "05", "5", "x", "y"]),
    st.floats(allow_nan=False, width=16),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3), st.just({"a": 1}))
_DOCS = st.fixed_dictionaries(
    {},
    optional={"id": st.one_of(st.integers(0, 5), st.just("05")), "s": _VALUES, "n": _VALUES},
)
# Every document holding a non-empty string and a true number (the one-pass paths).
_PLAIN_DOCS = st.fixed_dictionaries(
    {
        "id": st.integers(0, 5),
        "s": st.sampled_from(["A", "B", "05", "1e999", "x"]),
        "n": st.one_of(st.integers(-3, 3), st.sampled_from([1.0, 2.5, 2**70])),
    }
)


def _batches(docs: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    step = st.tuples(st.integers(0, 7), st.one_of(st.none(), docs))
    return st.lists(st.lists(step, max_size=12), max_size=6)


def _index_set(table: Callable[[], Table], hashes: Any = (["/s"], ["/s", "/n"])) -> IndexSet:
    return IndexSet(["/id"], hashes, ["/n", "/s"], table)


# Single-field indexes only: put_values refiles an update index by index from the kept
# values (IndexSet._moves); with a two-field hash index it gathers them first.
_LAYOUTS = [(["/s"], ["/s", "/n"]), (["/s"], ["/id"])]


def _kept(ix: IndexSet, keys: list[int]) -> list[list[tuple[type, str]]]:
    out = []
    for key in keys:
        values = ix.kept_values(key)
        out.append([(type(v), repr(v)) for v in values])
    return out


@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("table", [dict, lambda: new_table(True)])
@settings(max_examples=150, deadline=None)
@given(batches=st.one_of(_batches(_DOCS), _batches(_PLAIN_DOCS)))
def test_batches_equal_one_put_at_a_time(
    table: Callable[[], Table], layout: Any, batches: Any
) -> None:
    reference = _index_set(dict, layout)
    single, batch = _index_set(table, layout), _index_set(table, layout)
    live: dict[int, Any] = {}
    filed: set[int] = set()  # the keys the batch-fed set holds
    for steps in batches:
        puts: list[tuple[int, Any]] = []
        for key, doc in steps:
            if doc is None:  # a delete: the batch so far is applied first
                if key not in live:
                    continue
                _put_batch(batch, puts, filed)
                puts = []
                old = live.pop(key)
                reference.on_delete(key, old)
                single.on_delete(key)
                batch.on_delete(key)
                filed.discard(key)
                continue
            reference.on_put(key, live.get(key), doc)
            single.put_values(key, single.values(doc), key not in live)
            puts.append((key, doc))
            live[key] = doc
        _put_batch(batch, puts, filed)
        want = index_snapshot(reference)
        assert index_snapshot(single) == want
        assert index_snapshot(batch) == want
        keys = sorted(live)
        assert _kept(single, keys) == _kept(batch, keys) == _kept(reference, keys)


def _put_batch(
    ix: IndexSet, puts: list[tuple[int, Any]], filed: set[int], defer: bool = False
) -> None:
    inserted = []
    for key, _doc in puts:
        inserted.append(key not in filed)
        filed.add(key)
    put = ix.defer_columns if defer else ix.put_columns
    put([k for k, _ in puts], ix.columns([d for _, d in puts]), inserted)


def test_changes_finds_other_types_and_values() -> None:
    keys = [1, 2, 3, 4, 5, 6]
    old = [1, 1, "a", ABSENT, math.nan, MISSING]
    new = [1, 1.0, "a", 7, math.nan, None]
    got = changes(keys, old, new)
    assert got.keys == [2, 4, 5, 6]
    assert got.old_keys == [2, 5, 6]
    assert got.old_values[0] == 1
    assert got.old_values[2] is MISSING
    assert got.new[1] == 7


def test_forgotten_values_take_the_old_documents() -> None:
    ix = _index_set(dict)
    ix.on_put(1, None, {"id": 1, "s": "a", "n": 2})
    ix.forget_values()
    assert not ix.values_known
    ix.on_put(1, {"id": 1, "s": "a", "n": 2}, {"id": 1, "s": "b", "n": 3})
    ix.on_delete(1, {"id": 1, "s": "b", "n": 3})
    fresh = _index_set(dict)
    assert index_snapshot(ix) == index_snapshot(fresh)


@settings(max_examples=60, deadline=None)
@given(
    start=st.lists(st.sampled_from(["A", "B", "C", "05"]), min_size=1, max_size=30),
    moves=st.lists(
        st.tuples(st.integers(0, 29), st.sampled_from(["A", "B", "D", "05", None])),
        max_size=40,
    ),
)
def test_writes_to_saved_buckets_equal_writes_to_key_sets(start: list[str], moves: Any) -> None:
    """A loaded hash index keeps a written bucket packed with its changes beside it
    (``PendingKeys``); reads, saves and counts see the same keys as an index of key sets."""
    keys = list(range(100, 100 + len(start)))
    plain = IndexSet(["/id"], [["/s"]], [])
    plain.put_columns(keys, [keys, start], [True] * len(keys))
    loaded = IndexSet(["/id"], [["/s"]], [])
    groups = KeyGroups()
    groups.add(range(len(keys)), start)
    loaded.hashes[0].add_groups(groups, keys)  # packed buckets, as after a load
    loaded.restore_counts(len(keys), set())
    loaded.keep_columns(keys, [keys, start])
    live = set(keys)
    for at, value in moves:
        key = 100 + at % len(keys)
        for ix in (plain, loaded):
            if value is None:
                if key in live:
                    ix.on_delete(key)
            else:
                ix.put_columns([key], [[key], [value]], [key not in live])
        if value is None:
            live.discard(key)
        else:
            live.add(key)
        probes = [("sA",), ("sB",), ("sD",), ("s05",), ("m5",)]
        for probe in probes:
            assert loaded.hashes[0].estimate([probe]) == plain.hashes[0].estimate([probe])
        loaded.hashes[0].check()
    ordered = sorted(live)
    saved = dump_indexes(loaded, ordered)
    again = IndexSet(["/id"], [["/s"]], [])
    assert load_indexes(again, saved, ordered)
    assert index_snapshot(again) == index_snapshot(plain)
    assert index_snapshot(loaded) == index_snapshot(plain)


@settings(max_examples=150, deadline=None)
@given(batches=st.one_of(_batches(_DOCS), _batches(_PLAIN_DOCS)))
def test_deferred_batches_equal_batches_filed_at_once(batches: Any) -> None:
    """``defer_columns`` runs left waiting, then ``settle``d (before a delete, and at
    the end of every other batch) = ``put_columns`` of each run at once."""
    now, later = _index_set(dict), _index_set(dict)
    filed_now: set[int] = set()
    filed_later: set[int] = set()
    for turn, steps in enumerate(batches):
        puts: list[tuple[int, Any]] = []
        for key, doc in steps:
            if doc is None:
                if key not in filed_now and key not in {k for k, _ in puts}:
                    continue
                _put_batch(now, puts, filed_now)
                _put_batch(later, puts, filed_later, defer=True)
                puts = []
                now.on_delete(key)
                later.settle()  # what Writer.forget does first
                later.on_delete(key)
                filed_now.discard(key)
                filed_later.discard(key)
                continue
            puts.append((key, doc))
        _put_batch(now, puts, filed_now)
        _put_batch(later, puts, filed_later, defer=True)
        if turn % 2:
            later.settle()
            assert index_snapshot(later) == index_snapshot(now)
    later.settle()
    assert index_snapshot(later) == index_snapshot(now)
    keys = sorted(filed_now)
    assert _kept(later, keys) == _kept(now, keys)
    assert later.live == now.live
