"""Tables filled from a copy of the key map's index = tables filled pair by pair.

A reopen fills the key map's table of record sizes and the index set's kept values
(one table per indexed path), all holding the key map's keys, with
``KeyTable.fill_from``: the key map's index copied, a key found at its own position not
probed. ``update(zip(keys, values))`` into an empty table is the reference; where
``fill_from`` cannot give the same mapping it says so and leaves the table empty. A
topic's kept values after a clean or a crash reopen equal its documents' values, with
the C fill and without it.
"""

from __future__ import annotations

import array
import os
import random
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sowlib.topic.keymap
from sowlib import SowStore
from sowlib.topic import slots

if os.environ.get("CI"):
    # CI machines have a compiler: there the C form must have been built.
    from sowlib.topic import keytable
else:
    keytable = pytest.importorskip("sowlib.topic.keytable")

U64 = 2**64
KEYS = st.integers(0, 30) | st.sampled_from([U64 - 1, 2**63, 2**40 + 3])
VALUES = st.one_of(
    st.integers(0, 2**63 - 1),
    st.sampled_from([-1, 2**63, 2**70, 1.5, "x", None, (1, 2.0)]),
)


def _source(keys: list[int], popped: list[int]) -> Any:
    table = keytable.KeyTable()
    table.update((k, 0) for k in keys)
    for k in popped:
        table.pop(k, None)  # dead entries: the copy rebuilds the index
    return table


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(KEYS, max_size=40),
    popped=st.lists(KEYS, max_size=4),
    seed=st.integers(0, 2**32),
    extra=st.sampled_from(["none", "repeat", "absent", "drop", "text"]),
    values=st.lists(VALUES, min_size=50, max_size=50),
)
def test_fill_from_is_the_update_of_the_pairs_in_the_sources_order(
    keys: list[int], popped: list[int], seed: int, extra: str, values: list[Any]
) -> None:
    source = _source(keys, popped)
    order = source.keys()
    given_keys: list[Any] = list(order)
    random.Random(seed).shuffle(given_keys)
    if extra == "repeat" and given_keys:
        given_keys.append(given_keys[0])  # later ones win
    elif extra == "absent":
        given_keys.append(U64 - 2)
    elif extra == "drop" and given_keys:
        given_keys.pop()
    elif extra == "text":
        given_keys.append("7")
    column = values[: len(given_keys)] + [0] * max(0, len(given_keys) - len(values))
    table = keytable.KeyTable()
    done = table.fill_from(source, given_keys, column)
    assert done == (set(given_keys) == set(order))
    if done:
        model: dict[Any, Any] = {}
        model.update(zip(given_keys, column, strict=True))
        assert table.keys() == order
        assert dict(table.items()) == model
        assert len(table) == len(model)
        table[U64 - 3] = 1  # still a working table: grows, finds, removes
        assert table.pop(U64 - 3) == 1
        assert not order or order[0] in table
    else:
        assert len(table) == 0
        assert table.keys() == []


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(KEYS, max_size=40, unique=True),
    popped=st.lists(KEYS, max_size=4),
    numbers=st.lists(st.integers(-1, 2**63 - 1), min_size=40, max_size=40),
)
def test_fill_from_a_column_in_the_sources_order(
    keys: list[int], popped: list[int], numbers: list[int]
) -> None:
    source = _source(keys, popped)
    order = source.keys()
    column = array.array("q", numbers[: len(order)])
    table = keytable.KeyTable()
    done = table.fill_from(source, None, column)
    assert done == all(n >= 0 for n in column)
    if done:
        assert table.items() == list(zip(order, column, strict=True))
    else:
        assert len(table) == 0


def test_fill_from_refuses_what_it_cannot_do() -> None:
    source = _source([1, 2, 3], [])
    filled = keytable.KeyTable()
    filled[9] = 9
    assert filled.fill_from(source, [1, 2, 3], [1, 2, 3]) is False
    assert filled.items() == [(9, 9)]  # a table not empty is left as it was
    others = keytable.KeyTable()
    others["text"] = 1
    others[1] = 2
    assert keytable.KeyTable().fill_from(others, ["text", 1], [1, 2]) is False
    with pytest.raises(ValueError, match="one length"):
        keytable.KeyTable().fill_from(source, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="8-byte"):
        keytable.KeyTable().fill_from(source, None, b"1234567")
    with pytest.raises(TypeError):
        keytable.KeyTable().fill_from({1: 2}, None, [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        keytable.KeyTable().fill_from(source, (1, 2, 3), [1, 2, 3])  # type: ignore[arg-type]
    assert slots.fill_like({}, source, [1, 2, 3], [1, 2, 3]) is False  # a dict: refused
    empty = keytable.KeyTable()
    assert empty.fill_from(keytable.KeyTable(), [], []) is True
    assert len(empty) == 0


def _kept(topic: Any) -> dict[str, dict[Any, Any]]:
    indexes = topic.indexes
    assert indexes.values_known
    return {path.to_text(): dict(table.items()) for path, table in indexes.kept_tables()}


def _documents(topic: Any) -> dict[str, dict[Any, Any]]:
    docs = {rec.doc["id"]: rec.doc for rec in topic.sow()}
    keys = {topic.lookup(i).sow_key: i for i in docs}
    out: dict[str, dict[Any, Any]] = {}
    for field in ("g", "v"):
        out["/" + field] = {int(k): docs[i].get(field) for k, i in keys.items()}
    return out


@pytest.mark.parametrize("fill", ["c", "pairs"])
@settings(max_examples=25, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.integers(0, 12),
            st.sampled_from(["a", "b", "05", 7, None]),
            st.sampled_from([1, 2.5, -0.0, "x", None]),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_kept_values_after_a_reopen_are_the_documents_values(
    fill: str, ops: list[tuple[int, Any, Any, bool]]
) -> None:
    """Updates and deletes put the log's order apart from the key map's; the kept
    values loaded (clean) or rebuilt (crash) are those of the live documents."""
    directory = tempfile.mkdtemp()
    try:
        with SowStore(directory) as store:
            topic = store.create_topic("t", keys=["/id"], hash_indexes=[["/g"]], indexes=["/v"])
            for i, g, v, delete in ops:
                if delete:
                    topic.sow_delete_by_data({"id": i})
                else:
                    topic.publish({"id": i, "g": g, "v": v})
            path = topic.stats()["path"]
            expected = _kept(topic)
            assert expected == _documents(topic)
        with pytest.MonkeyPatch.context() as patch:
            if fill == "pairs":
                patch.setattr(sowlib.topic.keymap, "fill_like", lambda *_args: False)
            for ending in ("clean", "crash"):
                if ending == "crash":
                    os.unlink(path + ".ckpt")
                with SowStore(directory) as store:
                    topic = store.topic("t")
                    assert topic.stats()["from_checkpoint"] == (ending == "clean")
                    assert _kept(topic) == expected
                    topic.check()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(KEYS, max_size=40, unique=True),
    distinct=st.lists(VALUES, min_size=1, max_size=5),
    picks=st.lists(st.integers(0, 4), min_size=40, max_size=40),
)
def test_fill_from_distinct_values_and_their_codes(
    keys: list[int], distinct: list[Any], picks: list[int]
) -> None:
    """The checkpoint's form of a kept column: values[i] = distinct[codes[i]]."""
    source = _source(keys, [])
    codes = array.array("I", [p % len(distinct) for p in picks[: len(keys)]])
    table = keytable.KeyTable()
    assert table.fill_from(source, list(keys), (distinct, codes)) is True
    assert table.items() == [(k, distinct[c]) for k, c in zip(keys, codes, strict=True)]
    if keys:
        bad = array.array("I", [len(distinct)] * len(keys))
        with pytest.raises(ValueError, match="past the values"):
            keytable.KeyTable().fill_from(source, None, (distinct, bad))
    with pytest.raises(TypeError):
        keytable.KeyTable().fill_from(source, None, (tuple(distinct), codes))  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    entries=st.dictionaries(KEYS, st.integers(0, 2**40) | st.just((7, 1, 1.0, 2.0, b"c", 9))),
    removed=st.lists(KEYS, max_size=5),
    content=st.booleans(),
)
def test_compaction_remap_in_c_equals_the_remap_of_the_mapping(
    entries: dict[int, Any], removed: list[int], content: bool
) -> None:
    # Compaction of a file: sorted_offsets then remap_sorted (C passes, no dict) against
    # sorted(live_offsets()) then remap of the {old: new} dict.
    from sowlib.storage import MemoryLog
    from sowlib.topic.keymap import KeyMap
    from sowlib.topic.logview import LogView

    view = LogView(MemoryLog())
    fast, reference = KeyMap(view, content=content), KeyMap(view, content=content)
    for keymap in (fast, reference):
        for key, slot in entries.items():
            keymap.slots[key] = slot
        for key in removed:
            keymap.slots.pop(key, None)
    olds = fast.sorted_offsets()
    live = sorted(reference.live_offsets())
    if olds is None:  # only the C table of bare offsets gives them
        bare = all(type(s) is int for s in reference.slots.values())
        assert not (content and slots.NATIVE_SLOTS and bare)
        return
    assert olds == live
    news = [7 + 3 * i for i in range(len(olds))]
    mapping = dict(zip(live, news, strict=True))
    fast.remap_sorted(olds, news)
    reference.remap(mapping)
    assert fast.keys() == reference.keys()
    assert fast.offsets() == reference.offsets()
    assert type(fast.slots) is type(reference.slots)


def test_remapped_offsets_refuses_what_it_cannot_map() -> None:
    table = keytable.KeyTable()
    table.update([(1, 10), (2, 20)])
    col = array.array("q", [10, 20])
    assert table.remapped_offsets(col, array.array("q", [5, 6])) is not None
    assert table.remapped_offsets(array.array("q", [10]), array.array("q", [5])) is None
    with pytest.raises(ValueError):
        table.remapped_offsets(array.array("q", [20, 10]), array.array("q", [5, 6]))
    with pytest.raises(ValueError):
        table.remapped_offsets(col, array.array("q", [5]))
    table[3] = (1, 2)
    assert table.sorted_offsets() is None
    assert table.remapped_offsets(col, array.array("q", [5, 6])) is None


@pytest.mark.parametrize("top", [2**11, 2**33, 2**62])
def test_sorted_and_remapped_offsets_of_a_large_table(top: int) -> None:
    # Many entries (the sort's passes over every digit), offsets repeated included.
    rng = random.Random(top)
    table = keytable.KeyTable()
    pairs = [(rng.randrange(U64), rng.randrange(top)) for _ in range(20_000)]
    table.update(pairs)
    values = table.values()
    olds = sorted(set(values))
    offsets = table.sorted_offsets()
    assert offsets is not None
    assert array.array("q", offsets).tolist() == sorted(values)
    news = [rng.randrange(2**40) for _ in olds]
    mapping = dict(zip(olds, news, strict=True))
    got = table.remapped_offsets(array.array("q", olds), array.array("q", news))
    assert got is not None
    assert array.array("q", got).tolist() == [mapping[v] for v in values]
