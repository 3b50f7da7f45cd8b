"""The query pipeline's shortcuts against their references.

- an ordered page sorted on the values themselves where every value is a true number
  (``pipeline._plain_column``) = sorted on ``OrderKey.plain_value`` of each;
- sort values taken from what the index set keeps per key (``TopicSource.kept_columns``)
  = the values read out of the records (``TopicSource.field_columns``);
- a hash plan kept per filter text = a plan made afresh, across writes, deletes and a
  reopen (the rows of every query = every document tested with the filter);
- the rows of a query are the records ``get`` reads, whatever the collector does.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.expr import compile_filter
from sowlib.paths import parse_path
from sowlib.query import OrderBy
from sowlib.query import pipeline as pipeline_module

# Sort values: true numbers of both kinds (NaN, infinities, floats equal to ints, ints
# beyond a float's precision), booleans, text, NULL, arrays.
NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.integers(2**53, 2**53 + 3),
    st.sampled_from([0.5, 2.0, -1.5, 1e20, math.inf, -math.inf, math.nan, float(2**53)]),
)
VALUES = st.one_of(
    NUMBERS, st.booleans(), st.sampled_from(["a", "2", ""]), st.none(), st.just([1, 2])
)


def _order(term: Any, values: list[Any], descending: bool) -> list[int]:
    """Positions sorted as ``_ordered`` sorts them (ties kept in position order)."""
    return sorted(range(len(values)), key=values.__getitem__, reverse=descending)


@given(values=st.lists(st.one_of(NUMBERS, VALUES), max_size=30), descending=st.booleans())
def test_a_column_of_true_numbers_sorts_as_its_components(
    values: list[Any], descending: bool
) -> None:
    for text in ("/v", "/v TEXT"):
        term = OrderBy.parse(text).keys[0]
        column = pipeline_module._plain_column(term, list(values))
        reference = [term.plain_value(v) for v in values]
        assert _order(term, column, descending) == _order(term, reference, descending)
        if column is not reference and column != reference:
            # taken as they are only when every value is an int or a float, no NaN
            assert not term.text
            assert all(type(v) in (int, float) and not math.isnan(v) for v in values)


@given(values=st.lists(NUMBERS, max_size=30), descending=st.booleans())
def test_only_columns_without_nan_or_other_kinds_are_taken_as_they_are(
    values: list[Any], descending: bool
) -> None:
    term = OrderBy.parse("/v").keys[0]
    column = pipeline_module._plain_column(term, list(values))
    has_nan = any(math.isnan(v) for v in values)
    assert (column == list(values) and not has_nan) or column == [
        term.plain_value(v) for v in values
    ]


DOC_VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 2.0, 1e20, "a", "2", "", None, True, [1, 2], {"n": 1}, "missing"]),
)


def _doc(i: int, v: Any, s: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": i}
    if v != "missing":
        doc["v"] = v
    if s != "missing":
        doc["s"] = s
    return doc


_STORES = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(docs=st.lists(st.tuples(DOC_VALUES, DOC_VALUES), min_size=1, max_size=30))
def test_kept_values_are_the_values_read_out_of_the_records(
    tmp_path: Path, docs: list[tuple[Any, Any]]
) -> None:
    with SowStore(str(tmp_path / f"s{next(_STORES)}")) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]], indexes=["/v"])
        t.publish_many([_doc(i, v, s) for i, (v, s) in enumerate(docs)])
        t.publish(_doc(0, *docs[-1]))
        source = t._p.source  # the topic's QuerySource
        keys = list(source.keys())
        rows = source.records_of(keys)
        paths = [parse_path("/v"), parse_path("/s")]
        kept = source.kept_columns(keys, paths)
        assert kept == source.field_columns([r.data for r in rows], paths)
        assert source.kept_columns(keys, [parse_path("/id")]) is None  # no index reads it
        assert source.kept_columns([*keys, 10**6], paths) is None  # a key not live


def _scan(t: Any, text: str) -> list[str]:
    flt = compile_filter(text)
    return sorted(r.sow_key for r in t.sow() if flt.matches(r.doc))


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 15), st.sampled_from(["a", "b", 1, None])),
        st.tuples(st.just("delete"), st.integers(0, 15), st.none()),
        st.tuples(st.just("query"), st.sampled_from(["a", "b", "1"]), st.none()),
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_a_kept_hash_plan_follows_every_write(tmp_path: Path, ops: list[Any]) -> None:
    with SowStore(str(tmp_path / f"p{next(_STORES)}")) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]])
        for op, arg, value in ops:
            if op == "put":
                t.publish({"id": arg, "s": value})
            elif op == "delete":
                t.sow_delete_by_keys([t.key_for({"id": arg})])
            else:
                text = f"/s = '{arg}'" if arg != "1" else "/s = 1"
                assert sorted(r.sow_key for r in t.sow(text)) == _scan(t, text)


def test_a_hash_plan_is_kept_by_filter_text_and_made_again_for_new_indexes(
    tmp_path: Path,
) -> None:
    directory = str(tmp_path / "s")
    with SowStore(directory) as store:
        t = store.create_topic("t", keys=["/id"], hash_indexes=[["/s"]])
        t.publish_many([{"id": i, "s": f"k{i % 3}"} for i in range(30)])
        first = t.sow("/s = 'k1'")
        kept = dict(t._p.source.plans)  # the source's kept plans
        assert list(kept) == ["/s = 'k1'"]
        t.publish({"id": 99, "s": "k1"})
        t.sow_delete_by_keys([t.key_for({"id": 1})])
        again = t.sow("/s = 'k1'")
        assert t._p.source.plans["/s = 'k1'"] is kept["/s = 'k1'"]
        assert sorted(r.sow_key for r in again) == _scan(t, "/s = 'k1'")
        assert len(again) == len(first)  # one added, one deleted
        t.sow("/s > 'k0'")  # not a hash plan: not kept
        assert list(t._p.source.plans) == ["/s = 'k1'"]
    with SowStore(directory) as store:  # a new topic object, new indexes: planned anew
        t = store.topic("t")
        assert not t._p.source.plans
        assert sorted(r.sow_key for r in t.sow("/s = 'k1'")) == _scan(t, "/s = 'k1'")


def test_rows_are_the_records_get_reads_through_collections(tmp_path: Path) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"], indexes=["/v"])
        t.publish_many([{"id": i, "v": i % 7} for i in range(3000)])
        t.publish({"id": 1, "v": 100})
        got = t.sow("/v >= 0", order_by="/v DESC, /id", top_n=2000)
        gc.collect()
        for rec in got[:50]:
            assert rec == t.get(rec.sow_key)
            assert rec.doc is rec.doc
            assert rec.doc == json.loads(rec.data)
        assert [r.doc["v"] for r in got[:2]] == [100, 6]
        by_key = [t.get(r.sow_key) for r in got]
        assert [r.timestamp for r in got] == [r.timestamp for r in by_key if r is not None]
        del got
        gc.collect()
        assert len(t.sow("/v = 3")) == len([i for i in range(3000) if i % 7 == 3 and i != 1])
