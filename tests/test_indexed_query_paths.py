"""Indexed query shortcuts against their references (issue 29).

- ``top_n`` + ``order_by`` on a memo-indexed field with no filter, read off the index's
  top tie groups (``pipeline.top_rows``) = every record sorted by ``OrderBy.sort_key``
  (ties by SOW key), across mixed value kinds, writes, deletes and a reopen;
- a memo range's keys as a list (``MemoIndex.candidate_keys``) = the set of
  ``MemoIndex.candidates``, no key twice;
- the keys of a run of values of a sorted map, packed or not
  (``SortedMap.keys_between``) = their key sets one after the other;
- a hash lookup of one bucket (``HashIndex.probe_keys``) = ``lookup_probes``;
- the rows of an indexed equality or range query = every document tested by the filter;
- a plan's index name and detail, made only when read, say what they said before;
- query options made again (kept by their values) = options checked afresh.
"""

from __future__ import annotations

import array
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import QueryOptionError
from sowlib.expr import compile_filter
from sowlib.index import HashIndex, MemoIndex
from sowlib.index.clauses import regions
from sowlib.index.packed import PackedKeys, pack_positions
from sowlib.index.sortedmap import SortedMap
from sowlib.query import OrderBy, QueryOptions
from sowlib.query import pipeline as pipeline_module

# Sort values: many ties among true numbers (ints and floats equal to them, booleans),
# plus the kinds the fast path must leave to the reference.
NUMBERS = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 2.0, -1.0, 1e20, 2**53 + 1]))
OTHERS = st.sampled_from([True, False, "a", "2", "", None, "missing", [1, 2], math.nan])
VALUES = st.one_of(NUMBERS, NUMBERS, NUMBERS, OTHERS)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 14), VALUES),
        st.tuples(st.just("delete"), st.integers(0, 14), st.none()),
        st.tuples(st.just("reopen"), st.none(), st.none()),
    ),
    min_size=1,
    max_size=40,
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _doc(i: int, v: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": i, "s": f"S{i % 3}"}
    if v != "missing":
        doc["v"] = v
    return doc


def _apply(tmp_path: Path, ops: list[Any], check: Any) -> None:
    path = str(tmp_path / "store")
    store = SowStore(path)
    topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/v"])
    try:
        for op, i, v in ops:
            if op == "put":
                topic.publish(_doc(i, v))
            elif op == "delete":
                topic.sow_delete(f"/id = {i}")
            else:
                store.close()
                store = SowStore(path)
                topic = store.topic("t")
            check(topic)
    finally:
        store.close()


def _expected(topic: Any, order: str, skip: int, top: int) -> list[str]:
    parsed = OrderBy.parse(order)
    every = sorted(topic.sow(), key=lambda r: parsed.sort_key(r.doc, r.sow_key))
    return [r.sow_key for r in every[skip : skip + top]]


@SETTINGS
@given(ops=OPS, top=st.integers(1, 6), skip=st.integers(0, 3))
def test_a_top_n_page_read_off_the_memo_index_is_the_sorted_page(
    tmp_path: Path, ops: list[Any], top: int, skip: int
) -> None:
    def check(topic: Any) -> None:
        for order in ("/v DESC", "/v", "/v ASC"):
            got = topic.sow(order_by=order, top_n=top, skip_n=skip or None)
            assert [r.sow_key for r in got] == _expected(topic, order, skip, top), order
            assert all(r.data for r in got)

    _apply(tmp_path, ops, check)


@SETTINGS
@given(ops=OPS)
def test_indexed_queries_return_what_a_scan_selects(tmp_path: Path, ops: list[Any]) -> None:
    texts = [
        "/v BETWEEN -1 AND 2",
        "/v >= 0.5",
        "/v < 1",
        "/v = 2",
        "/v IN (1, 2, 'a')",
        "/v BETWEEN 0 AND 1 AND /s = 'S1'",
        "/s = 'S1'",
        "/s IN ('S0', 'S2')",
    ]

    def check(topic: Any) -> None:
        every = topic.sow()
        for text in texts:
            flt = compile_filter(text)
            want = sorted(r.sow_key for r in every if flt.matches(r.doc))
            got = [r.sow_key for r in topic.sow(text)]
            assert sorted(got) == want, text

    _apply(tmp_path, ops, check)


MEMO_VALUES = st.one_of(NUMBERS, st.sampled_from(["a", "2", "b", None, [1, 2], math.nan]))


@given(
    values=st.lists(MEMO_VALUES, max_size=40),
    lo=st.integers(-4, 4),
    width=st.integers(0, 4),
)
def test_memo_candidate_keys_are_the_candidates(values: list[Any], lo: int, width: int) -> None:
    memo = MemoIndex("/v")
    for i, v in enumerate(values):
        memo.update(i, v, True)
    for text in (f"/v BETWEEN {lo} AND {lo + width}", f"/v > {lo}", f"/v = {lo}", "/v < 'b'"):
        found = regions(compile_filter(text).node)
        assert found is not None
        for region in found[1]:
            listed = list(memo.candidate_keys(region))
            assert len(listed) == len(set(listed)), text
            assert set(listed) == memo.candidates(region), text


@given(values=st.lists(NUMBERS, min_size=1, max_size=40), need=st.integers(1, 10))
def test_memo_top_groups_are_the_first_groups(values: list[Any], need: int) -> None:
    memo = MemoIndex("/v")
    for i, v in enumerate(values):
        memo.update(i, v, True)
    for descending in (False, True):
        got = memo.top_groups(need, descending)
        assert got is not None
        reference = []
        for group in memo.groups(descending=descending):
            reference.append(set(group))
            if sum(map(len, reference)) >= need:
                break
        assert [set(g) for g in got] == reference


def test_memo_top_groups_leave_null_text_and_loose_values_to_the_reference() -> None:
    memo = MemoIndex("/v")
    memo.update(1, 5, True)
    memo.update(2, None, True)
    assert memo.top_groups(1, descending=True) is None  # NULL comes first descending
    assert memo.top_groups(1, descending=False) is not None
    assert memo.top_groups(2, descending=False) is None  # the NULL group is reached
    memo.update(3, "x", True)
    assert memo.top_groups(1) is None
    other = MemoIndex("/v")
    other.update(1, math.nan, True)
    assert other.top_groups(1) is None


def test_the_top_n_fast_path_serves_a_numeric_field(tmp_path: Path) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/v"])
        for i in range(20):
            topic.publish({"id": i, "v": i % 7})
        source = topic._p.source
        rows = pipeline_module.top_rows(source, OrderBy.parse("/v DESC"), 4)
        assert rows is not None
        assert [r.sow_key for r in rows] == _expected(topic, "/v DESC", 0, 4)
        assert pipeline_module.top_rows(source, OrderBy.parse("/v TEXT"), 4) is None
        assert pipeline_module.top_rows(source, OrderBy.parse("/v, /id"), 4) is None


def test_one_hash_bucket_is_the_lookup() -> None:
    index = HashIndex(["/s"])
    for i in range(10):
        index.add(i, {"s": f"S{i % 3}"})
    probes = index.probes([["S1"]])
    assert probes is not None
    assert len(probes) == 1
    assert sorted(index.probe_keys(probes[0])) == sorted(index.lookup_probes(probes))
    assert list(index.probe_keys(("sNONE",))) == []
    index.add(99, {"s": math.nan})  # verify-always: returned by every lookup
    assert sorted(index.probe_keys(probes[0])) == sorted(index.lookup_probes(probes))


def test_a_saved_bucket_is_listed_off_its_positions_and_stays_packed(tmp_path: Path) -> None:
    """After a reopen a bucket is packed: its keys are listed without building its key
    set, as the unpacked bucket lists them; a write then a read unpack it as before."""
    with SowStore(str(tmp_path)) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]])
        t.publish_many([{"id": i, "s": f"S{i % 3}"} for i in range(30)])
    with SowStore(str(tmp_path)) as store:
        t = store.topic("t")
        index = t.indexes.hashes[0]
        probes = index.probes([["S1"]])
        assert probes is not None
        packed = index.probe_keys(probes[0])
        assert [type(b) for b in index.saved()[1]] == [PackedKeys] * 3  # still packed
        assert sorted(packed) == sorted(index.lookup_probes(probes))  # now unpacked
        assert sorted(r.doc["id"] for r in t.sow("/s = 'S1'")) == list(range(1, 30, 3))
        t.publish({"id": 1, "s": "S2"})
        assert sorted(r.doc["id"] for r in t.sow("/s = 'S1'")) == list(range(4, 30, 3))
        assert sorted(index.probe_keys(probes[0])) == sorted(index.lookup_probes(probes))


def test_plan_descriptions_are_made_when_read(tmp_path: Path) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/v"])
        for i in range(300):
            topic.publish({"id": i, "s": f"S{i % 3}", "v": i})
        plan = topic.explain("/s = 'S1' AND /v > 3")
        assert (plan.kind, plan.index) == ("hash", "hash(/s)")
        assert plan.detail == "/s = 'S1' + residual filter"
        assert plan.describe() == "hash hash(/s) [/s = 'S1' + residual filter] 100 candidates"
        memo = topic.explain("/v BETWEEN 3 AND 5")
        assert (memo.kind, memo.index, memo.detail) == ("memo", "memo(/v)", "")
        assert memo.describe() == "memo memo(/v) ~3 candidates"


@given(
    groups=st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=4, unique=True), max_size=12),
    packed=st.lists(st.booleans(), min_size=12, max_size=12),
    span=st.tuples(st.integers(0, 12), st.integers(0, 12)),
)
def test_sorted_map_keys_between_are_the_key_sets_of_the_values(
    groups: list[list[int]], packed: list[bool], span: tuple[int, int]
) -> None:
    keys = [f"k{i}" for i in range(31)]
    flat: array.array[int] = array.array("I")
    mapping: dict[Any, Any] = {}
    for value, members in enumerate(groups):
        if packed[value]:
            mapping[value] = pack_positions(keys, flat, members)
        else:
            mapping[value] = dict.fromkeys(keys[m] for m in members)
    sorted_map = SortedMap()
    sorted_map.load(mapping)
    lo, hi = sorted(span)
    want = [keys[m] for members in groups[lo:hi] for m in members]
    assert sorted_map.keys_between(lo, hi) == want
    # the packed sets read are unpacked once, the others left as they are
    for value, found in sorted_map.map.items():
        assert type(found) is (dict if lo <= value < hi or not packed[value] else PackedKeys)


def test_options_made_again_are_the_options_checked_afresh() -> None:
    first = QueryOptions.make(order_by="/v DESC", top_n=1, skip_n=2)
    assert QueryOptions.make(order_by="/v DESC", top_n=1, skip_n=2) == first
    assert first.order_by == OrderBy.parse("/v DESC")
    assert (first.top_n, first.skip_n) == (1, 2)
    # a bool equals the int it stands for, but is not a count: never the kept options
    with pytest.raises(QueryOptionError):
        QueryOptions.make(order_by="/v DESC", top_n=True, skip_n=2)
    for _ in range(2):  # a bad value is refused every time
        with pytest.raises(QueryOptionError):
            QueryOptions.make(order_by="/v DESC", top_n=-1)
