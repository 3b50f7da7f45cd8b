"""The C KeyTable agrees with the dict it replaces in the key map.

``sowlib.topic.keytable`` (built where a compiler is found) must behave as a dict for
every operation the key map uses, with one documented difference: keys that are not
ints in ``[0, 2**64)`` are listed after those that are.
"""

from __future__ import annotations

import array
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sowlib import SowStore
from sowlib.errors import CorruptRecordError, StoreClosedError
from sowlib.topic import slots, views

if os.environ.get("CI"):
    # CI machines have a compiler: there the C form must have been built.
    from sowlib.topic import keytable
else:
    keytable = pytest.importorskip("sowlib.topic.keytable")

U64 = 2**64
# Few distinct keys, so that sets, pops and re-inserts meet the same keys.
table_keys = st.one_of(
    st.integers(min_value=0, max_value=40),
    st.sampled_from([U64 - 1, 2**63, 2**32 + 7]),
)
other_keys = st.one_of(
    st.sampled_from(["7", "x", "", "18446744073709551616"]),
    st.sampled_from([-1, U64, -(2**70)]),
)
any_keys = st.one_of(table_keys, table_keys, other_keys)
values = st.one_of(
    st.integers(min_value=0, max_value=2**63 - 1),
    st.sampled_from([-1, 2**63, 2**80]),
    st.tuples(st.integers(0, 9), st.integers(0, 9), st.floats(allow_nan=False), st.just(b"c")),
)


def ordered(model: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """The model's items in the table's order: the u64 ints, then the rest."""

    def held(k: Any) -> bool:
        return type(k) is int and 0 <= k < U64

    items = list(model.items())
    return [kv for kv in items if held(kv[0])] + [kv for kv in items if not held(kv[0])]


class TableMatchesDict(RuleBasedStateMachine):
    """Random operations on a KeyTable and on a dict give the same answers."""

    def __init__(self) -> None:
        super().__init__()
        self.table = keytable.KeyTable()
        self.model: dict[Any, Any] = {}

    @rule(key=any_keys, value=values)
    def set(self, key: Any, value: Any) -> None:
        self.table[key] = value
        self.model[key] = value

    @rule(key=any_keys)
    def pop(self, key: Any) -> None:
        assert self.table.pop(key, None) == self.model.pop(key, None)

    @rule(key=any_keys)
    def pop_without_default(self, key: Any) -> None:
        expected = self.model.pop(key, KeyError)
        if expected is KeyError:
            with pytest.raises(KeyError):
                self.table.pop(key)
        else:
            assert self.table.pop(key) == expected

    @rule(key=any_keys)
    def delete(self, key: Any) -> None:
        if key in self.model:
            del self.model[key]
            del self.table[key]
        else:
            with pytest.raises(KeyError):
                del self.table[key]

    @rule(key=any_keys)
    def read(self, key: Any) -> None:
        assert self.table.get(key) == self.model.get(key)
        assert self.table.get(key, "absent") == self.model.get(key, "absent")
        assert (key in self.table) == (key in self.model)
        if key in self.model:
            assert self.table[key] == self.model[key]
        else:
            with pytest.raises(KeyError):
                self.table[key]

    @rule(pairs=st.lists(st.tuples(any_keys, values), max_size=8))
    def update(self, pairs: list[tuple[Any, Any]]) -> None:
        self.table.update(pairs)
        self.model.update(pairs)

    @rule(pairs=st.lists(st.tuples(table_keys, st.integers(0, 2**63 - 1)), max_size=8))
    def update_columns(self, pairs: list[tuple[int, int]]) -> None:
        keys = array.array("Q", [k for k, _ in pairs]).tobytes()
        offsets = array.array("q", [v for _, v in pairs]).tobytes()
        self.table.update_columns(keys, offsets)
        self.model.update(pairs)

    @rule(pairs=st.lists(st.tuples(any_keys, values), max_size=20))
    def swap(self, pairs: list[tuple[Any, Any]]) -> None:
        # The batch put of the key map and the kept index values: the values replaced,
        # in order (a key repeated in the batch sees its earlier value).
        absent = object()
        expected = []
        for key, value in pairs:
            expected.append(self.model.get(key, absent))
            self.model[key] = value
        got = self.table.swap([k for k, _ in pairs], [v for _, v in pairs], absent)
        assert len(got) == len(expected)
        assert all(
            g is absent if e is absent else g == e for g, e in zip(got, expected, strict=True)
        )

    @rule(pairs=st.lists(st.tuples(any_keys, values), max_size=20))
    def assign(self, pairs: list[tuple[Any, Any]]) -> None:
        self.table.assign([k for k, _ in pairs], [v for _, v in pairs])
        self.model.update(pairs)

    @rule()
    def clear(self) -> None:
        self.table.clear()
        self.model.clear()

    @invariant()
    def same_content_and_order(self) -> None:
        expected = ordered(self.model)
        assert len(self.table) == len(expected)
        assert self.table.items() == expected
        assert self.table.keys() == [k for k, _ in expected]
        assert self.table.values() == [v for _, v in expected]
        assert list(self.table) == [k for k, _ in expected]


TestTableMatchesDict = TableMatchesDict.TestCase
TestTableMatchesDict.settings = settings(max_examples=300, stateful_step_count=60)


@given(st.lists(st.tuples(st.integers(0, U64 - 1), st.integers(0, 2**63 - 1)), max_size=3000))
def test_growth_and_removal_keep_insertion_order(pairs: list[tuple[int, int]]) -> None:
    """Past many rebuilds (growth, then removal of most keys) the order is a dict's."""
    table, model = keytable.KeyTable(), dict[int, int]()
    table.update(pairs)
    model.update(pairs)
    for key in list(model)[::3]:
        assert table.pop(key) == model.pop(key)
    table.update(pairs[:50])
    model.update(pairs[:50])
    assert table.items() == list(model.items())


def test_update_columns_refuses_bad_columns() -> None:
    table = keytable.KeyTable()
    with pytest.raises(ValueError, match="one length"):
        table.update_columns(b"\0" * 8, b"")
    with pytest.raises(ValueError, match="negative"):
        table.update_columns(b"\0" * 8, array.array("q", [-5]).tobytes())
    with pytest.raises(TypeError):
        table.update([(1, 2, 3)])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        keytable.KeyTable(1)  # type: ignore[call-arg]
    assert len(table) == 0


def test_swap_and_assign_refuse_what_is_not_two_lists_of_one_length() -> None:
    table = keytable.KeyTable()
    with pytest.raises(TypeError):
        table.swap((1, 2), [3, 4], None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        table.assign([1, 2], [3])
    with pytest.raises(TypeError):
        table.swap([1], [2])  # type: ignore[call-arg]
    assert len(table) == 0


def test_memory_per_key_is_a_fraction_of_a_dict() -> None:
    """A million bare entries in a KeyTable take well under half a dict's bytes."""
    n = 1_000_000
    table = keytable.KeyTable()
    table.update_columns(array.array("Q", range(n)).tobytes(), array.array("q", range(n)).tobytes())
    assert table.__sizeof__() / n < 50


@pytest.mark.parametrize("content", [True, False])
def test_slots_of_columns_is_the_dict_of_the_pairs(content: bool) -> None:
    keys = [5, 3, 5, U64 - 1]
    offsets = [10, 20, 30, 40]
    for key_arg in (array.array("Q", keys).tobytes(), keys):
        table = slots.slots_of_columns(content, key_arg, array.array("q", offsets).tobytes())
        assert list(table.items()) == list(dict(zip(keys, offsets, strict=True)).items())
        assert isinstance(table, dict) != (content and slots.NATIVE_SLOTS)


def _reads(path: str) -> list[list[Any]]:
    with SowStore(path, cache_bytes=0) as store:
        orders = store.topic("orders")
        keys = [orders.key_for({"id": i}) for i in range(65)]
        return [[orders.lookup(i) for i in range(65)], [orders.get(k) for k in keys]]


def test_a_topic_reads_the_same_without_the_c_row_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row reader of a single key (probe, checked read and Record in one C call: the
    by-key read when lookup and get hand over) against the Python path, on common records
    and on records with an expiration or a correlation id (lookup and get take the Python
    path both times: tests/test_keyread.py has their C form)."""
    with SowStore(str(tmp_path)) as store:
        orders = store.create_topic("orders", keys=["/id"])
        for i in range(60):
            orders.publish(
                {"id": i, "px": i},
                expiration=3600 if i % 7 == 0 else None,
                correlation_id=f"c{i}" if i % 5 == 0 else None,
            )
        orders.publish({"id": 3, "px": -1})
    calls = []
    real = views.record_reader

    class Counted:
        """The reader, its ``rows`` counted."""

        def __init__(self, reader: Any) -> None:
            self.reader = reader

        def rows(self, keys: list[Any]) -> Any:
            calls.append(keys)
            return self.reader.rows(keys)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.reader, name)

    def counted(**fields: Any) -> Any:
        reader = real(**fields)
        return None if reader is None else Counted(reader)

    monkeypatch.setattr(views.Views, "key_reader", lambda *args, **kwargs: None)
    monkeypatch.setattr(views, "record_reader", counted)
    with_c = _reads(str(tmp_path))
    # With the C table, every lookup and every get went through the C read; without it
    # (SOWLIB_PURE_PYTHON), none.
    assert (len(calls) >= 60 + 60) == slots.NATIVE_SLOTS
    monkeypatch.setattr(views, "record_reader", lambda **fields: None)
    without = _reads(str(tmp_path))
    assert with_c == without
    assert [r is None for r in with_c[0]] == [False] * 60 + [True] * 5


def test_the_c_reads_leave_what_they_cannot_read_to_the_python_path(tmp_path: Path) -> None:
    """A damaged record and a closed log are the Python path's to report."""
    store = SowStore(str(tmp_path))
    orders = store.create_topic("orders", keys=["/id"])
    orders.publish({"id": 1, "px": "x" * 40})
    orders.publish({"id": 2, "px": "y" * 40})
    store.close()
    log_path = next(p for p in tmp_path.iterdir() if p.name.endswith(".sow"))
    data = bytearray(log_path.read_bytes())
    at = data.find(b"x" * 40)
    data[at] = ord("z")
    log_path.write_bytes(bytes(data))
    store = SowStore(str(tmp_path), readonly=True)
    orders = store.topic("orders")
    assert orders.lookup(2) is not None
    with pytest.raises(CorruptRecordError):
        orders.lookup(1)
    store.close()
    with pytest.raises(StoreClosedError):
        orders.lookup(2)


READER_FIELDS: dict[str, Any] = {
    "record_type": tuple,
    "topic": "t",
    "message_type": "json",
    "doc": None,
    "digest": len,
    "cache_get": lambda key: None,
    "cache_put": None,
    "cost_base": 0,
    "cost_factor": 1,
    "admit_mask": 7,
}


def test_the_reader_checks_its_arguments() -> None:
    reader = keytable.Reader(**READER_FIELDS)
    with pytest.raises(TypeError, match="tuple type"):
        keytable.Reader(**{**READER_FIELDS, "record_type": int})
    with pytest.raises(TypeError, match="callable"):
        keytable.Reader(**{**READER_FIELDS, "cache_get": 5})
    with pytest.raises(TypeError):
        keytable.Reader(**{**READER_FIELDS, "topic": b"t"})
    with pytest.raises(TypeError):
        reader.rows((1, 2))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reader.set_map(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reader.bind((), len, len)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        reader.bind([], 1, len)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reader.bind([], len, len, "head")  # type: ignore[arg-type]
    # unbound, or bound to what it cannot read: the Python path
    assert reader.rows([7]) is NotImplemented
    assert reader.lookup(7) is NotImplemented
    assert reader.get("7") is NotImplemented
    table = keytable.KeyTable()
    table["text"] = 5
    table[8] = (1, 2, 0.0, 5.0, b"", 9)
    reader.set_table(table)
    reader.set_map(b"")
    assert reader.rows(["text", 7, 8, -1]) == (["text", 8, -1], 3)
    lock = threading.Lock()
    reader.bind([], lock.acquire, lock.release)
    assert reader.lookup(7) is NotImplemented  # bound without a key domain
    assert reader.get("8") is NotImplemented  # an entry with header fields
    assert reader.get("7") is None
    assert not lock.locked()
    reader.bind([(1.0, 1, 7)], lock.acquire, lock.release, b"h")
    assert reader.lookup(7) is NotImplemented  # an expiration pending
    reader.set_table({})
    assert reader.rows([7]) is NotImplemented
    reader.set_table(table)
    reader.set_map(None)
    assert reader.rows([7]) is NotImplemented


def test_lookup_by_int_is_get_of_its_key_through_expirations_and_close(tmp_path: Path) -> None:
    """lookup's one-int path (get's steps inlined) answers as get(key_for(...)): with an
    expiration pending, after it is due, and once the topic is closed."""
    now = [1000.0]
    store = SowStore(str(tmp_path), clock=lambda: now[0], cache_bytes=1 << 20)
    orders = store.create_topic("orders", keys=["/id"], expiration="10s")
    for i in range(20):
        orders.publish({"id": i}, expiration=5 if i % 2 else None)
    key_of = [orders.key_for({"id": i}) for i in range(22)]
    for moment in (1001.0, 1006.0):
        now[0] = moment
        for _ in range(2):  # the second round may come from the cache
            assert [orders.lookup(i) for i in range(22)] == [orders.get(k) for k in key_of]
    assert [orders.lookup(i) is None for i in range(20)] == [i % 2 == 1 for i in range(20)]
    store.close()
    with pytest.raises(StoreClosedError):
        orders.lookup(0)
    with pytest.raises(StoreClosedError):
        orders.get(key_of[0])


@settings(max_examples=80, deadline=None)
@given(
    keys=st.lists(st.integers(0, U64 - 1), unique=True, max_size=80),
    picks=st.lists(st.integers(0, 200), max_size=60),
)
def test_sorted_values_are_the_dicts_values_sorted(keys: list[int], picks: list[int]) -> None:
    """The C position lookup of index saving against ``sorted(map(dict.__getitem__, ...))``."""
    table = keytable.KeyTable()
    positions = list(range(len(keys)))[::-1]
    table.update(zip(keys, positions, strict=True))
    chosen = list(dict.fromkeys(keys[i] for i in picks if i < len(keys)))
    column = array.array("I")
    column.frombytes(table.sorted_values(iter(chosen)))
    where = dict(zip(keys, positions, strict=True))
    assert column.tolist() == sorted(map(where.__getitem__, chosen))


def test_sorted_values_refuses_absent_keys_and_other_values() -> None:
    table = keytable.KeyTable()
    table.update([(1, 5), (2, 2**32), (3, (1, 2)), ("text", 7), ("big", 2**40)])
    assert table.sorted_values(["text", 1]) == array.array("I", [5, 7]).tobytes()
    assert table.sorted_values([]) == b""
    with pytest.raises(KeyError):
        table.sorted_values([1, 9])
    with pytest.raises(KeyError):
        table.sorted_values(["nope"])
    for bad in (2, 3, "big"):
        with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
            table.sorted_values([bad])
    with pytest.raises(TypeError):
        table.sorted_values(5)  # type: ignore[arg-type]


def test_saved_indexes_are_the_same_bytes_with_the_c_positions(tmp_path: Path) -> None:
    """A clean close saves the indexes through ``slots.position_finder`` where the C
    table is built; the bytes equal those of the dict of positions (the reference)."""
    from sowlib.index.persist import dump_indexes

    store = SowStore(str(tmp_path))
    orders = store.create_topic("orders", keys=["/id"], hash_indexes=[["/g"]], indexes=["/v"])
    orders.publish_many([{"id": i, "g": "abc"[i % 3], "v": i % 17} for i in range(3000)])
    for i in range(0, 3000, 7):  # entries with a correlation id: listed after the others
        orders.publish({"id": i, "g": "z", "v": -i}, correlation_id=f"c{i}")
    orders.sow_delete("/v = 5")
    assert len(orders.sow("/v BETWEEN 1 AND 3")) > 0  # a memo index too
    writer, keys = orders._p.writer, orders._p.keys.to_blob()[1]
    assert writer.indexes is orders._p.indexes
    assert keys != orders._p.keys.keys()  # the order of the saved list, not the table's
    fast = dump_indexes(writer.indexes, keys, slots.position_finder)
    assert fast == dump_indexes(writer.indexes, keys)
    assert (slots.position_finder(keys) is not None) == slots.NATIVE_SLOTS
    assert slots.position_finder(["text", *keys]) is None
    store.close()
