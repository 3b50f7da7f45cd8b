"""The C reader's many-key read (``Reader.rows``, reader.c) against its reference, the
Python path of ``Views.records``: the same Records, in the same order, for any list of
keys (absent, repeated, deleted, with expirations and correlation ids, text keys), and the
keys it hands back are read the Python way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sowlib import SowStore
from sowlib.errors import CorruptRecordError
from sowlib.record import Record
from sowlib.topic import slots

pytestmark = pytest.mark.skipif(not slots.NATIVE_SLOTS, reason="the C key table is not built")


def fields(rec: Record) -> tuple[Any, ...]:
    return (*rec[:8], rec.doc)


def views_of(topic: Any) -> Any:
    return topic._p.views  # the topic's parts: what the query engine reads through


# One operation on key i: publish (plain, with an expiration, with a correlation id) or delete.
OPS = st.lists(
    st.tuples(st.sampled_from(["put", "expiring", "correlated", "delete"]), st.integers(0, 30)),
    max_size=60,
)
PICKS = st.lists(st.integers(0, 40), max_size=50)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, picks=PICKS)
def test_rows_read_in_c_equal_the_python_path(tmp_path: Path, ops: Any, picks: list[int]) -> None:
    with SowStore(str(tmp_path / "s"), clock=lambda: 1000.0) as store:
        t = store.create_topic(f"t{len(store.topics())}", keys=["/id"], expiration="enabled")
        for op, i in ops:
            if op == "delete":
                t.sow_delete(f"/id = {i}")
            else:
                t.publish(
                    {"id": i, "v": [op, i]},
                    expiration=3600 if op == "expiring" else None,
                    correlation_id="c" if op == "correlated" else None,
                )
        views = views_of(t)
        known = [views.keys.key_of(t.key_for({"id": i})) for i in range(41)]
        keys = [known[i] for i in picks] + ["not-a-content-key", -1, 2**64]
        got = views.records(keys)
        expected = views.records_of_log(keys)
        assert [fields(r) for r in got] == [fields(r) for r in expected]
        assert all(type(r) is Record for r in got)


def test_rows_are_read_in_c_unless_the_python_path_must_decide(tmp_path: Path) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many([{"id": i} for i in range(10)])
        t.publish({"id": 3}, correlation_id="c")  # an entry with header fields
        views = views_of(t)
        keys = [views.keys.key_of(t.key_for({"id": i})) for i in range(10)]
        rows, pending = views._reader.rows(keys)
        assert pending == 1
        assert rows[3] == keys[3]  # handed back in its place
        assert [r.doc for i, r in enumerate(rows) if i != 3] == [
            {"id": i} for i in range(10) if i != 3
        ]
        assert [r.correlation_id for r in views.records(keys)][3] == b"c"
        other = new_reader()
        assert other.rows(keys) is NotImplemented  # neither table nor map handed over yet
        other.set_table({})
        other.set_map(store_map(t))
        assert other.rows(keys) is NotImplemented  # a dict, not a KeyTable
        other.set_table(views.keys.slots)
        assert other.rows(keys)[1] == 1
        other.set_map(None)
        assert other.rows(keys) is NotImplemented  # a closed map


def test_a_damaged_record_is_left_to_the_python_path_which_raises(tmp_path: Path) -> None:
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many([{"id": i, "pad": "x" * 40} for i in range(4)])
        views = views_of(t)
        keys = [views.keys.key_of(t.key_for({"id": i})) for i in range(4)]
        offset = views.keys.offset(keys[2])
        store.flush()
        path = t._p.log.path
    with open(path, "r+b") as fh:  # flip a payload byte of key 2's record
        fh.seek(offset + 40)
        byte = fh.read(1)
        fh.seek(offset + 40)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with SowStore(str(tmp_path / "s"), readonly=True) as store:
        t = store.topic("t")
        views = views_of(t)
        rows, pending = views._reader.rows(keys)
        assert pending == 1
        assert rows[2] == keys[2]
        with pytest.raises(CorruptRecordError):
            views.records(keys)


def store_map(topic: Any) -> Any:
    return topic._p.log.mm


def new_reader() -> Any:
    reader = slots.record_reader(
        record_type=Record,
        topic="t",
        message_type="json",
        doc=None,
        digest=len,
        cache_get=lambda key: None,
        cache_put=None,
        cost_base=0,
        cost_factor=1,
        admit_mask=7,
    )
    assert reader is not None
    return reader


def test_key_ints_at_the_digit_boundaries_are_read_as_their_values(tmp_path: Path) -> None:
    """Key ints around the 30-bit digit boundaries, the largest u64, and ints outside it:
    the C reader gives the Python path's answer for each, and reads every live key."""
    edges = [0, 1, 2**30 - 1, 2**30, 2**60 - 1, 2**60, 2**63, 2**64 - 1, 2**64, 2**90]
    edges += [-1, -(2**30), -(2**64), True]
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many([{"id": i} for i in range(50)])
        views = views_of(t)
        live = [views.keys.key_of(t.key_for({"id": i})) for i in range(50)]
        assert any(k >= 2**60 for k in live)  # keys of three digits are there
        keys = [*edges, *live, *edges]
        got = views.records(keys)
        assert [fields(r) for r in got] == [fields(r) for r in views.records_of_log(keys)]
        assert [r.doc for r in got] == [{"id": i} for i in range(50)]
        assert views._reader.rows(live)[1] == 0  # every live key read in C


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, n=st.integers(0, 45))
def test_the_first_keys_are_the_head_of_every_key(tmp_path: Path, ops: Any, n: int) -> None:
    """``Views.first_keys`` (the C reader's ``head`` of the key table, deleted entries
    skipped) is the head of the key map's listing; a query's ``top_n`` with no filter
    and no order reads those records."""
    with SowStore(str(tmp_path / "s"), clock=lambda: 1000.0) as store:
        t = store.create_topic(f"t{len(store.topics())}", keys=["/id"], expiration="enabled")
        for op, i in ops:
            if op == "delete":
                t.sow_delete(f"/id = {i}")
            else:
                t.publish({"id": i}, expiration=3600 if op == "expiring" else None)
        views = views_of(t)
        every = views.keys.keys()
        assert views.first_keys(n) == every[:n]
        assert views._reader.head(n) == every[:n]
        assert [r.sow_key for r in t.sow(top_n=n)] == [views.keys.text_of(k) for k in every[:n]]


def test_the_head_of_a_table_of_text_keys_is_left_to_the_python_path(tmp_path: Path) -> None:
    """Keys the KeyTable holds apart (not u64 ints) come after the ints: ``head`` hands
    over when it would reach them; a topic whose keys are text reads its dict's head."""
    reader = new_reader()
    assert reader.head(3) is NotImplemented  # no table bound
    table = slots.new_slots(True)
    table.update([(5, 0), ("x", 1), (7, 2)])
    del table[5]  # type: ignore[attr-defined]  # the C table deletes; a dict too
    reader.set_table(table)
    assert reader.head(0) == []
    assert reader.head(1) == [7]
    assert reader.head(2) is NotImplemented  # "x" would be reached
    assert list(table)[:2] == [7, "x"]
    with pytest.raises(ValueError):
        reader.head(-1)
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t")  # publisher-supplied keys: text, held in a dict
        for i in range(5):
            t.publish({"i": i}, sow_key=f"k{i}")
        assert views_of(t).first_keys(3) == ["k0", "k1", "k2"]
        assert [r.sow_key for r in t.sow(top_n=2)] == ["k0", "k1"]


def test_records_kept_by_small_reads_are_given_while_their_version_is_live(
    tmp_path: Path,
) -> None:
    """A small read keeps its Records (by key and offset): read again unchanged, the
    same Records; after an update, a delete, a compaction or a large read, what the
    Python path reads."""
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many([{"id": i, "v": 0} for i in range(300)])
        views = views_of(t)
        keys = [views.keys.key_of(t.key_for({"id": i})) for i in range(300)]
        few = keys[:5]
        first = views.records(few)
        again = views.records(few)
        assert all(a is b for a, b in zip(first, again, strict=True))
        t.publish({"id": 2, "v": 1})
        t.sow_delete_by_keys(t.key_for({"id": 4}))
        got = views.records(few)
        assert [r.doc for r in got] == [{"id": i, "v": 1 if i == 2 else 0} for i in (0, 1, 2, 3)]
        assert [fields(r) for r in got] == [fields(r) for r in views.records_of_log(few)]
        assert got[0] is first[0]
        t.compact()
        after = views.records(few)
        assert [fields(r) for r in after] == [fields(r) for r in got]
        assert all(a is not b for a, b in zip(after, got, strict=True))  # a new map
        assert [fields(r) for r in views.records(keys)] == [
            fields(r) for r in views.records_of_log(keys)
        ]


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    order=st.randoms(use_true_random=False),
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=8),
    many=st.integers(257, 700),
)
def test_reads_of_several_blocks_in_any_order_equal_the_python_path(
    tmp_path: Path, order: Any, sizes: list[int], many: int
) -> None:
    """More keys than one block of the C read (records prefetched a block at a time),
    given in any order with repeats, payloads of several sizes, the last record of the
    map among them: the Records of the Python path, in the order asked."""
    with SowStore(str(tmp_path / "s")) as store:
        t = store.create_topic(f"t{len(store.topics())}", keys=["/id"])
        t.publish_many([{"id": i, "pad": "x" * sizes[i % len(sizes)]} for i in range(many)])
        views = views_of(t)
        live = [views.keys.key_of(t.key_for({"id": i})) for i in range(many)]
        keys = live + order.choices(live, k=many // 3)
        order.shuffle(keys)
        got, pending = views._reader.rows(keys)
        assert pending == 0
        assert [fields(r) for r in got] == [fields(r) for r in views.records_of_log(keys)]
