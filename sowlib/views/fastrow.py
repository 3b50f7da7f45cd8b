"""The hot path of a view fed by the write path: one aggregate's argument read off a row.

:func:`fast_argument` gives, for one aggregate of a view, a function of the row of
values a :class:`~sowlib.views.feed.RowReader` holds to the aggregate's converted
argument. The common cases run inline: a number as it is (no conversion to make),
``+``, ``-`` and ``*`` of two numeric fields with the filter language's arithmetic.
Anything else (text, NULL, NaN, booleans, arrays, a 64-bit overflow, any other
expression) takes the reference: the compiled expression and the aggregate's own
``convert``. ``tests/views/test_view_feed.py`` checks both readings agree. Imports
``expr`` and ``views.definition``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sowlib.expr.nodes import Arith, Field, Node
from sowlib.expr.operators import I64_MAX, I64_MIN
from sowlib.paths import FieldPath
from sowlib.views.definition import AggregateCall

__all__ = ["fast_argument"]

Row = Sequence[Any]
_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}
#: Integers this large convert to a float without overflow (the arithmetic's as_float).
_FLOATABLE = 1 << 1000


def fast_argument(
    call: AggregateCall,
    found: Mapping[FieldPath, int],
    on_slots: Callable[[Node], Callable[[Any], Any]],
    names: Sequence[str],
) -> Callable[[Row], Any]:
    """``row -> converted argument`` of ``call``; ``found`` maps each path to its place in
    the row, ``on_slots(node)`` compiles an expression over the row's slots (named
    ``names``), the reference for what is not inline."""
    convert = call.state.convert
    node = call.node
    if node is None:  # COUNT(*): the same converted value for every record
        value = convert(1)
        return lambda _row: value
    # What convert gives a non-NaN int or float: the number itself, or True (COUNT).
    counts = call.state.numbers_count
    if isinstance(node, Field):
        return _field(found[node.path], convert, counts)
    left, right = (node.left, node.right) if isinstance(node, Arith) else (None, None)
    slow = on_slots(node)
    if (
        isinstance(node, Arith)
        and node.op in _OPS
        and isinstance(left, Field)
        and isinstance(right, Field)
    ):
        at = (found[left.path], found[right.path])
        return _arith(*at, _OPS[node.op], slow, names, convert, counts)

    def read(row: Row) -> Any:
        return convert(slow(dict(zip(names, row, strict=True))))

    return read


def _field(at: int, convert: Callable[[Any], Any], counts: bool) -> Callable[[Row], Any]:
    def read(row: Row) -> Any:
        v = row[at]
        t = type(v)
        if t is int or (t is float and v == v):
            return True if counts else v
        return convert(v)

    return read


def _arith(
    i: int,
    j: int,
    op: Callable[[Any, Any], Any],
    slow: Callable[[Any], Any],
    names: Sequence[str],
    convert: Callable[[Any], Any],
    counts: bool,
) -> Callable[[Row], Any]:
    """``row[i] op row[j]`` as the filter language computes it (floats when either is a
    float, 64-bit integers otherwise), inline when both are numbers in range."""

    def read(row: Row) -> Any:
        a = row[i]
        b = row[j]
        ta = type(a)
        tb = type(b)
        if ta is float and tb is float:
            v = op(a, b)
        elif ta is int and tb is int and I64_MIN <= a <= I64_MAX and I64_MIN <= b <= I64_MAX:
            v = op(a, b)
            if not I64_MIN <= v <= I64_MAX:  # wraps: the reference's arithmetic
                v = slow(dict(zip(names, row, strict=True)))
        elif (ta is float and tb is int and -_FLOATABLE < b < _FLOATABLE) or (
            ta is int and tb is float and -_FLOATABLE < a < _FLOATABLE
        ):
            v = op(float(a), float(b))
        else:
            v = slow(dict(zip(names, row, strict=True)))
        t = type(v)
        if t is int or (t is float and v == v):
            return True if counts else v
        return convert(v)

    return read
