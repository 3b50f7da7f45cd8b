"""Ranges over a memo index's numbers from its sorted columns agree with its key sets.

``MemoIndex.candidate_keys`` answers a range over true numbers from
``sowlib.index.numranges.NumberRanges`` (sorted columns plus the changes since) once it
is built; ``MemoIndex.candidates`` reads the key sets of every value in range, the
reference. Random sequences of adds, moves, removes and batches (numbers mostly, with
strings, NULLs, NaN and arrays mixed in) are interleaved with random ranges, and the two
answers must hold the same keys, none twice. The columns are merged every few changes
here (their threshold lowered) so merges happen inside the sequences.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.index import numranges
from sowlib.index.memo import MemoIndex
from sowlib.index.numranges import NumberRanges
from sowlib.index.regions import Interval, Region
from sowlib.index.sortedmap import SortedMap
from sowlib.index.upkeep import ABSENT

KEYS = 16
numbers = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([0.5, 1.0, -0.0, 2.25, 3.0, 2**53 + 1, -(2**60), 1e300, True, False]),
    st.floats(-6, 6, allow_nan=False),
)
others = st.one_of(
    st.sampled_from(["a", "5", "", None, math.nan]),
    st.lists(st.integers(-3, 3), max_size=3),
)
values = st.one_of(numbers, numbers, numbers, others)
bounds = st.one_of(st.none(), st.integers(-6, 6), st.floats(-7, 7, allow_nan=False))
keys = st.integers(0, KEYS - 1)
steps = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("move"), keys, numbers),
    st.tuples(st.just("del"), keys),
    st.tuples(st.just("batch"), st.dictionaries(keys, values, max_size=KEYS)),
    st.tuples(st.just("numbers"), st.dictionaries(keys, numbers, max_size=KEYS), st.booleans()),
    st.tuples(st.just("query"), bounds, bounds, st.booleans(), st.booleans(), st.booleans()),
)


@contextmanager
def small_delta() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numranges, "_MIN_DELTA", 3)
        yield


def _check(memo: MemoIndex, region: Region, held: dict[int, Any]) -> None:
    fast = list(memo.candidate_keys(region))
    reference = memo.candidates(region)
    assert sorted(set(fast)) == sorted(reference)
    if not memo.export()[1][2]:  # no record holds an array: a list, no key twice
        assert len(fast) == len(set(fast))
    iv = region.nums
    assert iv is not None

    def inside(value: Any) -> bool:
        return (iv.lo is None or value > iv.lo or (iv.lo_inc and value == iv.lo)) and (
            iv.hi is None or value < iv.hi or (iv.hi_inc and value == iv.hi)
        )

    for key, value in held.items():
        if type(value) in (int, float, bool) and value == value:
            assert (key in reference) == inside(value), (key, value, iv)
    maps, sets, _ = memo.export()
    if not sets[2] and not (region.by_value and maps[3]):
        # One sorted map serves the range: the keys come in value order, a value's keys
        # in the order its key set holds them (the order a query returns records in).
        nums = maps[0]
        want = [*sets[1], *(k for v in sorted(nums) if inside(v) for k in nums[v])]
        assert fast == want


def _batch(memo: MemoIndex, held: dict[int, Any], step: dict[int, Any], python: bool) -> None:
    """As the topic's index upkeep refiles a batch of keys (``python``: the reference
    loop of ``move_numbers``, not its C form)."""
    ks = list(step)
    olds = [held.get(k, ABSENT) for k in ks]
    news = list(step.values())
    moved = memo.move_numbers(ks, olds, news, native=None) if python else None
    if not moved and not memo.move_numbers(ks, olds, news):
        gone = [k for k in ks if k in held]
        if gone:
            memo.remove_many(gone, [held[k] for k in gone])
        memo.add_many(ks, news)
    held.update(step)


def _run(memo: MemoIndex, script: list[tuple[Any, ...]]) -> None:
    held: dict[int, Any] = {}
    for step in script:
        kind = step[0]
        if kind == "put":
            key, value = step[1], step[2]
            if key in held:
                memo.update(key, held[key], False)
            memo.update(key, value, True)
            held[key] = value
        elif kind == "move":
            key, value = step[1], step[2]
            if held.get(key, ABSENT) is not value:
                memo.move(key, held.get(key, ABSENT), value)
                held[key] = value
        elif kind == "del":
            if step[1] in held:
                memo.update(step[1], held.pop(step[1]), False)
        elif kind in ("batch", "numbers"):
            _batch(memo, held, step[1], kind == "numbers" and step[2])
        else:
            lo, hi, lo_inc, hi_inc, by_value = step[1:]
            region = Region(nums=Interval(lo, hi, lo_inc, hi_inc), by_value=by_value)
            for _ in range(2):  # a cold read first, then the columns
                _check(memo, region, held)


@settings(max_examples=400, deadline=None)
@given(st.lists(steps, max_size=60))
def test_ranges_agree_with_the_key_sets(script: list[tuple[Any, ...]]) -> None:
    with small_delta():
        _run(MemoIndex("/p"), script)


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=60))
def test_ranges_agree_with_the_default_thresholds(script: list[tuple[Any, ...]]) -> None:
    _run(MemoIndex("/p"), script)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(keys, numbers, max_size=KEYS),
    st.lists(st.tuples(keys, st.one_of(st.none(), numbers)), max_size=40),
    bounds,
    bounds,
)
def test_columns_alone_match_a_model(
    start: dict[int, Any], changes: list[tuple[int, Any]], lo: Any, hi: Any
) -> None:
    """NumberRanges against a plain dict of key -> value, merges included, until it
    drops its columns (the key sets, not kept current here, would then answer)."""
    sd = SortedMap()
    for key, value in start.items():
        got = sd.map.get(value)
        if got is None:
            sd.put(value, {key: None})
        else:
            got[key] = None
    ranges = NumberRanges()
    iv = Interval(lo, hi)
    with small_delta():
        assert ranges.keys_in(sd, iv) is None  # cold
        ranges.keys_in(sd, iv)
        model = dict(start)
        for key, value in changes:
            if value is None:
                model.pop(key, None)
                ranges.gone(key)
            else:
                model[key] = value
                ranges.note(key, value)
            found = ranges.keys_in(sd, iv)
            if found is None:  # dropped (many changes for few keys read): not built now
                assert not ranges.built
                break
            want = [
                k for k, v in model.items() if (lo is None or v >= lo) and (hi is None or v <= hi)
            ]
            assert sorted(found) == sorted(want)
            count = ranges.count_in(iv)
            assert count is not None
            assert count == len(want)  # few entries: counted exactly


def test_a_write_only_phase_drops_the_columns() -> None:
    memo = MemoIndex("/p")
    memo.add_many(list(range(10)), [float(i) for i in range(10)])
    region = Region(nums=Interval(2, 4))
    assert sorted(memo.candidate_keys(region)) == [2, 3, 4]  # cold: the key sets
    assert sorted(memo.candidate_keys(region)) == [2, 3, 4]  # the columns, built
    for i in range(3000):
        memo.move(i % 10, float(i % 10) if i < 10 else ABSENT, float(i % 10))
    assert sorted(memo.candidate_keys(region)) == [2, 3, 4]


def test_arrays_drop_the_columns_until_gone() -> None:
    memo = MemoIndex("/p")
    memo.add_many([1, 2, 3], [1.0, 2.0, 3.0])
    region = Region(nums=Interval(1.5, 9))
    for _ in range(2):
        assert sorted(memo.candidate_keys(region)) == [2, 3]
    memo.update(4, [2, 5], True)
    assert sorted(set(memo.candidate_keys(region))) == [2, 3, 4]
    memo.update(4, [2, 5], False)
    for _ in range(2):
        assert sorted(memo.candidate_keys(region)) == [2, 3]


def test_topic_ranges_through_updates_and_a_reopen(tmp_path: Any) -> None:
    """A topic's range queries equal a filter over every record, through ticks and a
    clean reopen (the index then comes back from its saved form)."""
    store = SowStore(os.fspath(tmp_path))
    topic = store.create_topic("t", keys=["/id"], indexes=["/price"])
    prices = {i: round((i * 7919) % 1000 / 10, 2) for i in range(400)}
    topic.publish_many([f'{{"id":{i},"price":{p}}}'.encode() for i, p in prices.items()])

    def check() -> None:
        for lo in (0, 12.5, 50, 99.9):
            got = sorted(r.doc["id"] for r in topic.sow(f"/price BETWEEN {lo} AND {lo + 7}"))
            assert got == sorted(i for i, p in prices.items() if lo <= p <= lo + 7)

    check()
    check()
    for tick in range(5):
        batch = {i: round(prices[i] + tick - 2.5, 2) for i in range(tick, 400, 3)}
        prices.update(batch)
        topic.publish_many([f'{{"id":{i},"price":{p}}}'.encode() for i, p in batch.items()])
        topic.publish(b'{"id":1000,"price":"n/a"}')
        topic.sow_delete("/id = 1000")
        check()
    store.close()
    store = SowStore(os.fspath(tmp_path))
    topic = store.topic("t")
    check()
    check()
    store.close()


@pytest.mark.parametrize("in_order", [True, False])
def test_columns_built_from_saved_key_sets(in_order: bool) -> None:
    """Saved (packed) key sets give the same columns whether they lie in value order in
    one column (one pass) or not, and are left packed."""
    import array

    from sowlib.index.packed import PackedKeys

    keys = [f"k{i}" for i in range(12)]
    flat = array.array("I", [3, 7, 0, 11, 5, 1, 9, 2, 10, 4, 8, 6])
    starts = [2 * i if in_order else 2 * (5 - i) for i in range(6)]  # two keys per value
    sd = SortedMap()
    sd.load({float(i): PackedKeys(keys, flat, start, 2) for i, start in enumerate(starts)})
    held = {keys[flat[start + j]]: float(i) for i, start in enumerate(starts) for j in (0, 1)}
    ranges = NumberRanges()
    iv = Interval(1.0, 3.5)
    want = sorted(k for k, v in held.items() if 1.0 <= v <= 3.5)
    assert len(want) == 6
    assert ranges.keys_in(sd, iv) is None
    assert sorted(ranges.keys_in(sd, iv) or []) == want
    assert {type(b) for b in sd.map.values()} == {PackedKeys}
