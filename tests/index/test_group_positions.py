"""Keys grouped by value in C (``movekeys.group_positions``) = the Python grouping.

A bulk index build (a crash reopen's rebuild) groups the positions of the live keys by
the value of each indexed path; where the C module is built, a column of one plain type
is grouped in one call (a counting sort). ``KeyGroups``' Python loop is the reference:
both must leave the same groups, in the same order, whatever the values and batches.
"""

from __future__ import annotations

import array
import math
import os
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.index import values as values_module
from sowlib.index.values import KeyGroups

if os.environ.get("CI"):
    # CI machines have a compiler: there the C form must have been built.
    from sowlib.index import movekeys
else:
    movekeys = pytest.importorskip("sowlib.index.movekeys")

NAN = math.nan
# Columns of one type (the C path) and of several (the Python path).
ONE_TYPE = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=40),
    st.lists(st.sampled_from([0.0, -0.0, 1.5, NAN, math.inf]), max_size=40),
    st.lists(st.integers(-5, 5) | st.sampled_from([2**64, -(2**70)]), max_size=40),
    st.lists(st.sampled_from(["", "a", "b", "05", "é", "a" * 200]), max_size=40),
    st.lists(st.booleans(), max_size=40),
    st.lists(st.none(), max_size=5),
)
MIXED = st.lists(
    st.one_of(st.integers(-2, 2), st.floats(width=16), st.booleans(), st.none(), st.text()),
    max_size=40,
)


def _grouped(batches: list[list[Any]], start: int, native: Any) -> KeyGroups:
    groups = KeyGroups(True)
    saved = values_module.NATIVE_GROUP_POSITIONS
    values_module.NATIVE_GROUP_POSITIONS = native
    try:
        at = start
        for batch in batches:
            groups.add(range(at, at + len(batch)), batch)
            at += len(batch)
    finally:
        values_module.NATIVE_GROUP_POSITIONS = saved
    return groups


def _plain(groups: KeyGroups) -> Any:
    """The groups as comparable lists: (type, [(value text, members)]) in order."""
    return [
        (kind, [(repr(value), list(members)) for value, members in by_value.items()])
        for kind, by_value in groups.by_type.items()
    ], [(m, repr(v)) for m, v in groups.others]


@settings(max_examples=200, deadline=None)
@given(
    columns=st.lists(st.one_of(ONE_TYPE, MIXED), min_size=1, max_size=4),
    start=st.sampled_from([0, 7, 2**32 - 200]),
)
def test_c_grouping_equals_the_python_grouping(columns: list[list[Any]], start: int) -> None:
    """Batch after batch (of one type or mixed), the same groups in the same order."""
    fast = _grouped(columns, start, movekeys.group_positions)
    slow = _grouped(columns, start, None)
    assert _plain(fast) == _plain(slow)
    for by_value in fast.by_type.values():
        for members in by_value.values():
            assert isinstance(members, array.array)
            assert members.typecode == "I"


@settings(max_examples=200, deadline=None)
@given(values=ONE_TYPE, start=st.integers(0, 1000))
def test_group_positions_is_a_stable_counting_sort(values: list[Any], start: int) -> None:
    distinct, counts, flat = movekeys.group_positions(values, start)
    sizes, positions = array.array("I"), array.array("I")
    sizes.frombytes(counts)
    positions.frombytes(flat)
    model: dict[Any, list[int]] = {}
    for i, value in enumerate(values):
        model.setdefault(value, []).append(start + i)
    assert [repr(v) for v in distinct] == [repr(v) for v in model]
    assert list(sizes) == [len(p) for p in model.values()]
    assert list(positions) == [p for group in model.values() for p in group]


def test_nan_objects_and_signed_zeros_group_as_a_dict_groups_them() -> None:
    """A NaN is only its own object's equal; -0.0 and 0.0 are one value."""
    other_nan = float("nan")
    values = [NAN, other_nan, NAN, -0.0, 0.0]
    distinct, counts, flat = movekeys.group_positions(values, 0)
    assert distinct[0] is NAN
    assert distinct[1] is other_nan
    assert distinct[2] == 0.0
    assert len(distinct) == 3
    assert array.array("I", counts) == array.array("I", [2, 1, 2])
    assert array.array("I", flat) == array.array("I", [0, 2, 1, 3, 4])


def test_group_positions_checks_its_arguments() -> None:
    with pytest.raises(TypeError):
        movekeys.group_positions((1, 2), 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        movekeys.group_positions([1], 0, 0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="2\\*\\*32"):
        movekeys.group_positions([1, 2], 2**32 - 1)
    with pytest.raises(ValueError, match="2\\*\\*32"):
        movekeys.group_positions([1], -1)
    with pytest.raises(TypeError):
        movekeys.group_positions([[1]], 0)  # unhashable
    assert movekeys.group_positions([], 5) == ([], b"", b"")


def test_the_c_form_is_used_where_built() -> None:
    if os.environ.get("SOWLIB_PURE_PYTHON"):
        assert values_module.NATIVE_GROUP_POSITIONS is None
    else:
        assert values_module.NATIVE_GROUP_POSITIONS is movekeys.group_positions


@pytest.mark.parametrize("kind", [float, int])
def test_many_distinct_numbers_group_as_a_dict_groups_them(kind: type) -> None:
    """Thousands of distinct values (the C table grows many times), repeated."""
    rng = random.Random(7)
    values = [kind(rng.randrange(-3000, 3000)) for _ in range(20_000)]
    values[5] = -0.0 if kind is float else -(2**63)
    distinct, counts, flat = movekeys.group_positions(values, 3)
    model: dict[Any, list[int]] = {}
    for i, value in enumerate(values):
        model.setdefault(value, []).append(3 + i)
    assert distinct == list(model)
    assert all(a is b for a, b in zip(distinct, dict.fromkeys(values), strict=True))
    assert array.array("I", counts).tolist() == [len(p) for p in model.values()]
    assert array.array("I", flat).tolist() == [p for group in model.values() for p in group]


@settings(max_examples=200, deadline=None)
@given(
    column=st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 50), max_size=60),
    bound=st.integers(0, 2**33) | st.integers(0, 60),
)
def test_the_saved_positions_range_check_is_max(column: list[int], bound: int) -> None:
    """A loaded index's positions are checked against the key count in one C pass."""
    positions = array.array("I", column)
    expected = not column or max(column) < bound
    assert movekeys.u32_below(positions, bound) == expected
    assert values_module.all_below(positions, bound) == expected
    saved = values_module._U32_BELOW
    try:
        values_module._U32_BELOW = None
        assert values_module.all_below(positions, bound) == expected
    finally:
        values_module._U32_BELOW = saved


def test_the_range_check_refuses_other_columns() -> None:
    with pytest.raises(ValueError, match="4-byte"):
        movekeys.u32_below(b"12345", 3)
    with pytest.raises(OverflowError):
        movekeys.u32_below(b"", -1)
