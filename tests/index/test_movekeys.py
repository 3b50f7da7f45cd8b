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


def test_bad_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError):
        movekeys.move_keys({}, [1], [ABSENT], [2], None, None, ABSENT, None)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        movekeys.move_keys([], [1], [ABSENT], [2], None, None, ABSENT, None, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="length"):
        movekeys.move_keys({}, [1, 2], [ABSENT], [2], None, None, ABSENT, None, None)
