"""The record cache: never over budget, and a cached record is always the latest put."""

from __future__ import annotations

from functools import partial

from hypothesis import given
from hypothesis import strategies as st

from sowlib.record import Record
from sowlib.topic.cache import RecordCache

_new = partial(tuple.__new__, Record)


def _record(key: int, version: int) -> Record:
    return _new((str(key), b"x" * version, version, 0.0, None, "t", "json", b"", None))


ops = st.lists(
    st.tuples(
        st.sampled_from(["put", "offer", "drop", "clear"]), st.integers(0, 9), st.integers(1, 400)
    ),
    max_size=200,
)


@given(budget=st.integers(0, 2000), steps=ops)
def test_the_cache_stays_within_budget_and_serves_only_the_latest_version(
    budget: int, steps: list[tuple[str, int, int]]
) -> None:
    cache = RecordCache(budget)
    latest: dict[int, Record] = {}
    for version, (op, key, cost) in enumerate(steps, start=1):
        rec = _record(key, version)
        if op == "put" or op == "offer":
            getattr(cache, op)(key, rec, cost)
            latest[key] = rec
        elif op == "drop":
            cache.drop(key)
            latest.pop(key, None)
        else:
            cache.clear()
            latest.clear()
        cache.check()
        for k in range(10):
            got = cache.get(k)
            assert got is None or got is latest.get(k)
    assert cache.used <= budget


def test_a_key_read_again_and_again_gets_into_the_cache() -> None:
    cache = RecordCache(1 << 20)
    rec = _record(1, 1)
    for _ in range(200):  # admitted with probability 1/8 per offer
        if cache.get(1) is None:
            cache.offer(1, rec, 100)
    assert cache.get(1) is rec


@given(budget=st.integers(0, 2000), steps=ops, dropped=st.lists(st.integers(0, 12)))
def test_drop_many_is_a_drop_of_each_key(
    budget: int, steps: list[tuple[str, int, int]], dropped: list[int]
) -> None:
    each, many = RecordCache(budget), RecordCache(budget)
    for version, (op, key, cost) in enumerate(steps, start=1):
        if op in ("put", "drop"):  # no offer: its random admission differs between the two
            rec = _record(key, version)
            for cache in (each, many):
                cache.put(key, rec, cost) if op == "put" else cache.drop(key)
    for key in dropped:
        each.drop(key)
    many.drop_many(iter(dropped))
    many.check()
    assert {k: many.get(k) for k in range(13)} == {k: each.get(k) for k in range(13)}
    assert many.used == each.used
