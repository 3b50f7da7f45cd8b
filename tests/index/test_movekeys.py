"""The C form of the indexes' key moves leaves the same index as the Python reference.

``MemoIndex.move_numbers`` and ``HashIndex.move_strings`` refile a batch of distinct keys
from their old values to their new ones; with ``native=None`` they run their Python loop
(the reference), by default the C form in ``sowlib.index.movekeys`` where it is built.
Both are run over the same batches, starting from the same index (its key sets plain or
packed, as a load leaves them), and must end with the same content.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex
from sowlib.index.upkeep import ABSENT
from sowlib.index.values import KeyGroups
from sowlib.storage import native as storage_native

if os.environ.get("CI"):
    from sowlib.index import movekeys
else:
    movekeys = pytest.importorskip("sowlib.index.movekeys")

KEYS = 12
numbers = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e300]),
)
# Plain words have one text; numeric strings ("5", "05") are filed under two.
words = st.sampled_from(["a", "b", "c", "5", "05", "x y", "é"])


def batches(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[int, Any]]]:
    return st.lists(st.dictionaries(st.integers(0, KEYS - 1), values, max_size=KEYS), max_size=6)


def _loaded(make: Any, start: dict[int, Any], packed: bool) -> Any:
    index = make()
    if start:
        keys, values = list(start), list(start.values())
        groups = KeyGroups(positions=packed)
        groups.add(range(len(keys)) if packed else keys, values)
        index.add_groups(groups, keys if packed else None)
    return index


def _run(index: Any, move: str, start: dict[int, Any], steps: list[dict[int, Any]], c: Any) -> None:
    held = dict(start)
    for step in steps:
        keys = list(step)
        olds = [held.get(k, ABSENT) for k in keys]
        assert getattr(index, move)(keys, olds, list(step.values()), native=c)
        held.update(step)


def test_the_c_form_is_loaded_where_built() -> None:
    from sowlib.index import upkeep

    if not os.environ.get(storage_native.PURE_PYTHON_ENV):
        assert upkeep.NATIVE_MOVE_KEYS is movekeys.move_keys
        assert upkeep.NATIVE_MOVE_KEY is movekeys.move_key


@settings(max_examples=200)
@given(start=st.dictionaries(st.integers(0, KEYS - 1), numbers), steps=batches(numbers),
       packed=st.booleans())  # fmt: skip
def test_memo_moves_agree(start: dict[int, Any], steps: list[dict[int, Any]], packed: bool) -> None:
    def make() -> MemoIndex:
        return MemoIndex("/p")

    ref, fast = _loaded(make, start, packed), _loaded(make, start, packed)
    _run(ref, "move_numbers", start, steps, None)
    _run(fast, "move_numbers", start, steps, movekeys.move_keys)
    assert fast.export() == ref.export()
    for which in ("_nums", "_words", "_numstrs", "_numvals"):
        assert list(getattr(fast, which).ordered()) == list(getattr(ref, which).ordered())


@settings(max_examples=200)
@given(start=st.dictionaries(st.integers(0, KEYS - 1), words), steps=batches(words),
       packed=st.booleans())  # fmt: skip
def test_hash_moves_agree(start: dict[int, Any], steps: list[dict[int, Any]], packed: bool) -> None:
    def make() -> HashIndex:
        return HashIndex(["/s"])

    ref, fast = _loaded(make, start, packed), _loaded(make, start, packed)
    _run(ref, "move_strings", start, steps, None)
    _run(fast, "move_strings", start, steps, movekeys.move_keys)
    # the same texts, each with the same keys (the order keys were filed in is no content)
    entries, buckets, loose = fast.export()
    want_entries, want_buckets, want_loose = ref.export()
    assert dict(zip(entries, buckets, strict=True)) == dict(
        zip(want_entries, want_buckets, strict=True)
    )
    assert loose == want_loose
    fast.check()


def _run_each(index: Any, start: dict[int, Any], steps: list[dict[int, Any]], c: Any) -> None:
    """``move`` of one key at a time (what a per-message publish does), unchanged values
    skipped as the index set skips them."""
    held = dict(start)
    for step in steps:
        for key, value in step.items():
            was = held.get(key, ABSENT)
            if type(was) is not type(value) or was != value:
                index.move(key, was, value, native=c)
            held[key] = value


# Any value: a move of two true numbers (or two non-empty strings) is one C call, the
# rest takes the Python path whatever ``native`` is.
any_value = st.one_of(numbers, words, st.sampled_from(["", None, True, 1e400 - 1e400, [1]]))


@settings(max_examples=200)
@given(start=st.dictionaries(st.integers(0, KEYS - 1), any_value), steps=batches(any_value),
       packed=st.booleans())  # fmt: skip
def test_one_key_moves_agree(
    start: dict[int, Any], steps: list[dict[int, Any]], packed: bool
) -> None:
    for make in (lambda: MemoIndex("/p"), lambda: HashIndex(["/s"])):
        ref, fast = _loaded(make, start, packed), _loaded(make, start, packed)
        _run_each(ref, start, steps, None)
        _run_each(fast, start, steps, movekeys.move_key)
        got, want = fast.export(), ref.export()
        if isinstance(fast, HashIndex):  # the order keys were filed in is no content
            got = (dict(zip(got[0], got[1], strict=True)), got[2])
            want = (dict(zip(want[0], want[1], strict=True)), want[2])
            fast.check()
        else:
            for which in ("_nums", "_words", "_numstrs", "_numvals"):
                assert list(getattr(fast, which).ordered()) == list(getattr(ref, which).ordered())
        assert got == want


def test_one_key_move_leaves_a_packed_key_set_to_the_caller() -> None:
    groups = KeyGroups(positions=True)
    groups.add(range(2), [1.5, 2.5])
    memo = MemoIndex("/p")
    memo.add_groups(groups, [10, 11])
    nums = memo._nums
    assert movekeys.move_key(nums.map, 10, 1.5, 2.5, *nums.pending()) is None  # packed
    assert memo.export()[0][0] == {1.5: {10: None}, 2.5: {11: None}}
    assert movekeys.move_key(nums.map, 10, 1.5, 3.5, *nums.pending()) == 0  # unpacked now
    assert movekeys.move_key({}, 12, None, 4.5, None, None) == 1
    with pytest.raises(TypeError):
        movekeys.move_key({}, 1, None, 2, set(), None)
    with pytest.raises(TypeError):
        movekeys.move_key([], 1, None, 2, None, None)  # type: ignore[arg-type]


def test_bad_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError):
        movekeys.move_keys({}, [1], [ABSENT], [2], None, None, ABSENT, None)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        movekeys.move_keys([], [1], [ABSENT], [2], None, None, ABSENT, None, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="length"):
        movekeys.move_keys({}, [1, 2], [ABSENT], [2], None, None, ABSENT, None, None)
