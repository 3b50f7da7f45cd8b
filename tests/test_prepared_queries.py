"""Queries kept prepared and the shortcuts of issue 29 against their references.

- a query asked again (kept prepared, ``sowlib.query.prepared``) returns what the
  reference gives: every record tested by the filter, or every record sorted by
  ``OrderBy.sort_key`` for a ``top_n`` page (read off the memo index's top keys by the
  C reader), across writes, deletes, compactions, reopens (saved, packed buckets) and a
  read-only follower whose index upkeep waits for its first query;
- a kept equality on a hash-indexed field gives what the filter gives, verify-always
  records (values the index cannot file) included;
- ``Prepared.run`` = ``run_query``;
- a memo index's kept top keys (``MemoIndex.top_keys``) = its top groups made afresh,
  across every kind of change of its numbers;
- a saved hash bucket read off its positions (``Reader.rows_at``) = the records of its
  keys listed; bad positions are refused;
- a numeric BETWEEN region made at once = the intersection of its two bounds' regions;
- options are still checked by exact type when a query is kept.
"""

from __future__ import annotations

import array
import contextlib
import math
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import FilterError, QueryOptionError
from sowlib.expr import compile_filter
from sowlib.expr.nodes import Between
from sowlib.index import HashIndex, MemoIndex
from sowlib.index.clauses import compare_region, regions
from sowlib.index.packed import PackedKeys
from sowlib.query import OrderBy, QueryOptions, run_query
from sowlib.query.prepared import MOST, Prepared

FILTERS = [
    "/s = 'S1'",
    "/s = 'S0'",
    "/s IN ('S0', 'S2')",
    "/p BETWEEN -1 AND 2",
    "/p BETWEEN 0.5 AND 0.5",
    "/p > 1",
    "/p = 2",
]
PAGES = [("/p DESC", 3), ("/p", 2), ("/p ASC", 5), ("/p DESC", 1)]
PRICES = st.one_of(
    st.integers(-2, 3), st.sampled_from([0.5, 2.0, -1.0]), st.sampled_from([None, "x", {"a": 1}])
)
#: /s: mostly text; an object is a value the hash index cannot file (its verify-always
#: set: the filter checks those records).
SYMBOLS = st.one_of(st.sampled_from(["S0", "S1", "S2"]), st.sampled_from([{"a": 1}, 1, ["S1"]]))
DOCS = st.tuples(st.integers(0, 11), SYMBOLS, PRICES)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(DOCS, min_size=1, max_size=6)),
        st.tuples(st.just("delete"), st.integers(0, 11)),
        st.tuples(st.sampled_from(["reopen", "refresh", "compact"]), st.none()),
    ),
    min_size=1,
    max_size=14,
)


def _doc(i: int, s: Any, p: Any) -> bytes:
    doc: dict[str, Any] = {"id": i, "s": s}
    if p is not None:
        doc["p"] = p  # (an object: a value no sorted map places)
    return orjson.dumps(doc)


def _rows(got: Any) -> list[tuple[str, bytes]]:
    return [(r.sow_key, r.data) for r in got]


def _check(topic: Any) -> None:
    every = topic.sow()
    for text in FILTERS:
        flt = compile_filter(text)
        want = sorted((r.sow_key, r.data) for r in every if flt.matches(r.doc))
        for _ in range(3):  # then kept prepared, then bound (a page)
            assert sorted(_rows(topic.sow(text))) == want, text
    for order, top in PAGES:
        parsed = OrderBy.parse(order)
        ordered = sorted(every, key=lambda r: parsed.sort_key(r.doc, r.sow_key))
        want = _rows(ordered[:top])
        for _ in range(3):  # the third time, a bound page (Prepared.fast)
            assert _rows(topic.sow(order_by=order, top_n=top)) == want, (order, top)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_kept_queries_answer_as_the_references(tmp_path_factory: Any, ops: list[Any]) -> None:
    directory: Path = tmp_path_factory.mktemp("prepared")
    with contextlib.ExitStack() as stack:
        with SowStore(directory) as first:  # saved: the reader opens from a checkpoint
            topic = first.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/p"])
            topic.publish_many([_doc(i, f"S{i % 3}", i % 4) for i in range(12)])
        reader = stack.enter_context(SowStore(directory, readonly=True))
        follower = reader.topic("t")
        _check(follower)
        store = stack.enter_context(SowStore(directory))
        topic = store.topic("t")
        for op, arg in ops:
            if op == "put":
                topic.publish_many([_doc(*doc) for doc in arg])
            elif op == "delete":
                topic.sow_delete_by_keys([topic.key_for({"id": arg})])
            elif op == "compact":
                topic.compact()
            elif op == "reopen":  # the writer's buckets saved, read packed again
                store.close()
                store = stack.enter_context(SowStore(directory))
                topic = store.topic("t")
            else:
                store.flush()
                reader.refresh()  # the follower's index upkeep waits for its next query
                _check(follower)
            _check(topic)
        store.flush()
        reader.refresh()
        _check(follower)
        follower.check()
        topic.check()


def test_prepared_run_is_run_query(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/p"])
        topic.publish_many([_doc(i, f"S{i % 3}", i % 5) for i in range(30)])
        source = topic._p.source
        for text in (None, "/s = 'S1'", "/p BETWEEN 1 AND 3"):
            flt = None if text is None else compile_filter(text)
            for options in (
                QueryOptions.make(order_by="/p DESC", top_n=4),
                QueryOptions.make(order_by="/p", top_n=4, skip_n=2),
                QueryOptions.make(top_n=3),
                QueryOptions.make(order_by="/p DESC", top_n=4, select="[-/s]"),
                QueryOptions(),
            ):
                prepared = Prepared(flt, options)
                for _ in range(2):
                    assert prepared.run(source) == run_query(source, flt, options)
        page = Prepared(None, QueryOptions.make(order_by="/p DESC", top_n=4))
        assert page.page is not None
        assert Prepared(None, QueryOptions.make(order_by="/p TEXT", top_n=4)).page is None
        assert Prepared(None, QueryOptions.make(order_by="/p, /id", top_n=4)).page is None


MEMO_PRICES = st.one_of(PRICES, st.sampled_from([math.nan, [1, 2], True]))
MEMO_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.integers(0, 9), MEMO_PRICES, st.booleans()),
        st.tuples(st.just("move"), st.integers(0, 9), st.integers(-2, 3), st.integers(-2, 3)),
        st.tuples(st.just("many"), st.integers(0, 9), st.integers(-2, 3), st.none()),
        st.tuples(st.just("clear"), st.none(), st.none(), st.none()),
    ),
    max_size=30,
)


def _fresh_top(memo: MemoIndex, need: int, descending: bool) -> list[Any] | None:
    groups = memo.top_groups(need, descending)
    if groups is None:
        return None
    return [k for g in groups for k in (g if len(g) == 1 else sorted(g, key=str))]


@given(ops=MEMO_OPS, need=st.integers(1, 5))
def test_kept_top_keys_are_the_top_groups_made_afresh(ops: list[Any], need: int) -> None:
    memo = MemoIndex("/p")
    filed: dict[int, Any] = {}
    for op, key, a, b in ops:
        if op == "update":
            if b and key not in filed:
                memo.update(key, a, True)
                filed[key] = a
            elif not b and key in filed:
                memo.update(key, filed.pop(key), False)
        elif op == "move" and filed.get(key, a) == a and type(filed.get(key, a)) is int:
            memo.move(key, filed[key], b) if key in filed else memo.update(key, b, True)
            filed[key] = b
        elif op == "many":
            keys = [k for k in range(key, key + 3) if k in filed and type(filed[k]) is int]
            news = [a] * len(keys)
            if keys and memo.move_numbers(keys, [filed[k] for k in keys], news):
                filed.update(dict.fromkeys(keys, a))
        elif op == "clear":
            memo.clear()
            filed.clear()
        for descending in (True, False):
            for _ in range(2):
                assert memo.top_keys(need, descending) == _fresh_top(memo, need, descending)


def test_a_saved_bucket_is_read_off_its_positions(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]])
        topic.publish_many([_doc(i, f"S{i % 3}", i) for i in range(40)])
    with SowStore(tmp_path / "s") as store:
        topic = store.topic("t")
        index = topic._p.source.indexes.hashes[0]
        probes = index.probes([["S1"]])
        assert probes is not None
        bucket = index.probe_keys(probes[0])
        assert type(bucket) is PackedKeys  # handed over packed
        views = topic._p.views
        listed = list(bucket)
        assert views.records(bucket) == views.records(listed) == views.records_of_log(listed)
        assert len(listed) == len(set(listed)) == 13
        assert all(k in bucket for k in listed)
        reader: Any = getattr(views.rows_reader, "__self__", None)
        with pytest.raises(TypeError):
            reader.rows_at(bucket.keys, array.array("H", [0]), 0, 1)
        with pytest.raises(IndexError):
            reader.rows_at(bucket.keys, bucket.positions, 0, len(bucket.positions) + 1)
        with pytest.raises(IndexError):
            reader.rows_at(bucket.keys, array.array("I", [len(bucket.keys)]), 0, 1)
        assert reader.rows_at(tuple(bucket.keys), bucket.positions, 0, 1) is NotImplemented
        other = PackedKeys(tuple(bucket.keys), bucket.positions, bucket.start, bucket.count)
        assert views.records(other) == views.records(listed)  # listed, then read in C
        topic.publish(_doc(1, "S0", 1))  # a write: the bucket is no longer the saved one
        after = index.probe_keys(probes[0])
        assert type(after) is not PackedKeys
        moved = topic._p.keys.key_of(topic.key_for({"id": 1}))
        assert sorted(after) == sorted(set(listed) - {moved})
        assert sorted(r.sow_key for r in topic.sow("/s = 'S1'")) == sorted(
            r.sow_key for r in topic.sow() if r.doc["s"] == "S1"
        )


NUMBERS = st.one_of(
    st.integers(-(2**60), 2**60), st.floats(allow_nan=True, allow_infinity=True), st.just(2**53)
)


@given(lo=NUMBERS, hi=NUMBERS)
def test_a_numeric_between_region_is_the_two_bounds_intersected(lo: Any, hi: Any) -> None:
    parsed = compile_filter("/p BETWEEN 1 AND 2").node
    assert isinstance(parsed, Between)
    low_node, high_node = attrs.evolve(parsed.low, value=lo), attrs.evolve(parsed.high, value=hi)
    node = attrs.evolve(parsed, low=low_node, high=high_node)
    low, high = compare_region(">=", lo), compare_region("<=", hi)
    want = None if low is None or high is None else low.intersect(high, multi=False)
    got = regions(node)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got[1] == [want]


def test_kept_queries_check_their_options_by_exact_type(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/p"])
        topic.publish_many([_doc(i, "S0", i) for i in range(5)])
        assert len(topic.sow(order_by="/p", top_n=1)) == 1
        with pytest.raises(QueryOptionError):
            topic.sow(order_by="/p", top_n=True)  # type: ignore[arg-type]
        with pytest.raises(QueryOptionError):
            topic.sow(order_by="/p", top_n=1.0)  # type: ignore[arg-type]
        with pytest.raises(FilterError):
            topic.sow("/p = ")
        with pytest.raises(FilterError):
            topic.sow("/p = ")  # a bad filter is not kept
        assert len(topic.sow(compile_filter("/p > 2"))) == 2  # a compiled filter
        for i in range(MOST + 5):
            topic.sow(f"/p > {i}")
        kept = topic._prepared
        assert kept is not None
        assert 0 < len(kept[1]) <= MOST
        store.close()
        with pytest.raises(Exception, match="closed"):
            topic.sow(order_by="/p", top_n=1)


LITERALS = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.sampled_from(["05", "5", "5.0", "", "x", 2**60]),
)


@given(value=LITERALS)
def test_the_probes_of_one_literal_are_those_of_the_general_path(value: Any) -> None:
    index = HashIndex(["/s"])
    # the same literal twice takes the general path (texts gathered, then made distinct)
    assert index.probes([[value]]) == index.probes([[value, value]])
    probes = index.probes([[value]])
    if probes is not None:
        assert index.estimate(probes) == index.estimate(iter(probes))


def _by_price_desc(got: Any) -> list[tuple[str, bytes]]:
    return _rows(sorted(got, key=lambda r: -orjson.loads(r.data)["p"]))


def test_a_page_asked_as_of_a_bookmark_binds_nothing(tmp_path: Path) -> None:
    """A kept page is bound to the topic's own index only: asked first as of a bookmark
    (a history source of its own), it still answers each form as its reference."""
    history = {"window": "1d", "granularity": "0s"}
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/p"], history=history)
        topic.publish_many([_doc(i, "S0", i) for i in range(8)])
        then = max(r.seq for r in topic.sow())
        topic.publish_many([_doc(i, "S0", -i) for i in range(0, 8, 2)])
        old = [(r.sow_key, r.data) for r in topic.sow(bookmark=then)]
        want_then = _by_price_desc(topic.sow(bookmark=then))  # (prices are distinct)
        want_now = _by_price_desc(topic.sow())
        assert sorted(old) != sorted(_rows(topic.sow()))
        for _ in range(3):
            assert _rows(topic.sow(order_by="/p DESC", top_n=3, bookmark=then)) == want_then[:3]
        assert topic._prepared is not None
        kept = topic._prepared[1][(None, "/p DESC", 3, None, None, 10)]
        assert kept.fast is None  # (served as of the bookmark: nothing bound)
        for _ in range(3):
            assert _rows(topic.sow(order_by="/p DESC", top_n=3)) == want_now[:3]
            assert _rows(topic.sow(order_by="/p DESC", top_n=3, bookmark=then)) == want_then[:3]
        assert kept.fast is not None  # (the plain page bound to the topic's own index)
