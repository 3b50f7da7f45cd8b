"""Reading index-friendly clauses out of a filter AST (spec §7).

Splits a filter into AND-ed conjuncts and recognises, per conjunct, an
equality/IN on a field (for key and hash lookups) or the memo :class:`Region`
a comparison, BETWEEN, IN, ``LIKE '^abc'`` or BEGINS WITH can only match in.
Imports only ``expr.nodes``, ``paths`` and ``index.*``.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from sowlib.expr.nodes import (
    And,
    BeginsWith,
    Between,
    Compare,
    Field,
    Like,
    Node,
)
from sowlib.expr.operators import FLIP
from sowlib.expr.shape import NOT_CONSTANT, constant, equality_shape
from sowlib.index.memo import ALL, Interval, Region
from sowlib.index.values import EXACT_LIMIT, to_number
from sowlib.paths import FieldPath

__all__ = ["conjuncts", "equality", "like_prefix", "literal_value", "regions"]

# The literal characters after a leading '^', up to the first metacharacter.
_PREFIX = re.compile(r"\^([^\\.^$|?*+()\[\]{}]*)(.?)")
# First characters the text of a number can start with (``-1``, ``inf``...).
_NUMBER_START = frozenset("0123456789+-.iIeEnN")
# The comparison operators a memo index can serve, and the true number types.
_COMPARE_OPS = frozenset(("=", "<", "<=", ">", ">="))
_NUMBER_TYPES = frozenset((int, float))


class _NoLiteral(Exception):
    """Internal signal: a clause operand is not a literal an index can look up."""


def conjuncts(node: Node) -> list[Node]:
    """The clauses of a top-level AND chain, left to right."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, And):
            stack.extend((n.right, n.left))
        else:
            out.append(n)
    return out


def literal_value(node: Node) -> Any:
    """The constant ``node`` stands for (a literal or a negated number:
    :func:`~sowlib.expr.shape.constant`).

    Raises:
        _NoLiteral: the node is not a constant.
    """
    value = constant(node)
    if value is NOT_CONSTANT:
        raise _NoLiteral
    return value


def _field_compare(node: Compare) -> tuple[FieldPath, str, Any] | None:
    """``(path, op, literal)`` for ``/f op lit`` or ``lit op /f``."""
    try:
        if isinstance(node.left, Field):
            return node.left.path, node.op, literal_value(node.right)
        if isinstance(node.right, Field):
            return node.right.path, FLIP[node.op], literal_value(node.left)
    except _NoLiteral:
        return None
    return None


def equality(node: Node) -> tuple[FieldPath, list[Any]] | None:
    """``(path, literals)`` when ``node`` is ``/f = lit`` or ``/f IN (lit, ...)``
    (:func:`~sowlib.expr.shape.equality_shape`, the shape a compiled filter keeps)."""
    got = equality_shape(node)
    return None if got is None else (got[0], list(got[1]))


def _bound(op: str, value: Any) -> Interval:
    if op == "=":
        return Interval(value, value)
    if op in (">", ">="):
        return Interval(lo=value, lo_inc=op == ">=")
    return Interval(hi=value, hi_inc=op == "<=")


def compare_region(op: str, value: Any) -> Region | None:
    """Region of values ``v`` for which ``v op value`` may hold (spec §2.4), or None."""
    if op not in _COMPARE_OPS:
        return None
    kind = type(value)
    if kind is float or kind is int:  # the usual operand, at once (as below)
        if value != value or abs(value) >= EXACT_LIMIT:  # (NaN, an infinity, too big)
            return None
        return Region(nums=_bound(op, value), words=op in (">", ">="), by_value=True)
    if value is None or value == "":
        return Region()  # a NULL operand never compares TRUE
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, int | float):
        if value != value or abs(value) >= EXACT_LIMIT or abs(value) == float("inf"):
            return None
        # A non-numeric string is greater than every number (row 5).
        return Region(nums=_bound(op, value), words=op in (">", ">="), by_value=True)
    num = to_number(value)
    if num is None:
        # Numbers never equal a non-numeric string and are always below it.
        nums = ALL if op in ("<", "<=") else None
    elif num != num or abs(num) >= EXACT_LIMIT:
        return Region(nums=ALL, texts=_bound(op, value), exact=False)
    else:
        nums = _bound(op, num)
    return Region(nums=nums, texts=_bound(op, value))


def _number_between(lo: float, hi: float) -> Region | None:
    """What ``compare_region(">=", lo).intersect(compare_region("<=", hi), multi=False)``
    gives for two true numbers (an int or a float each), made at once: the numbers from
    ``lo`` to ``hi`` (none when ``lo > hi``) and nothing else; None as compare_region."""
    if lo != lo or hi != hi or abs(lo) >= EXACT_LIMIT or abs(hi) >= EXACT_LIMIT:
        return None
    return Region(nums=Interval(lo, hi) if lo <= hi else None, by_value=True)


def like_prefix(pattern: str) -> str:
    """The text every match of LIKE ``pattern`` starts with ('' if none is certain).

    ``'^abc'`` -> ``abc``, ``'^ab.d'`` -> ``ab``, ``'^abc?'`` -> ``ab`` (the
    quantified character is optional); any alternation gives ``''``.

    Example:
        >>> like_prefix("^S0."), like_prefix("^ab*"), like_prefix("^a|b")
        ('S0', 'a', '')
    """
    m = _PREFIX.match(pattern)
    if m is None or "|" in pattern:
        return ""
    prefix, stop = m.group(1), m.group(2)
    return prefix[:-1] if stop in ("?", "*", "{") else prefix


def _prefix_region(prefix: str) -> Region:
    if prefix[0] in _NUMBER_START:
        return Region(nums=ALL, texts=Interval(prefix=prefix), exact=False)
    return Region(texts=Interval(prefix=prefix))


def regions(node: Node) -> tuple[FieldPath, list[Region], bool] | None:
    """``(path, regions, exact)`` for a memo-indexable clause, else None.

    A record can match only if one of its values lies in one of the regions.
    ``exact`` is False when the regions were intersected across several tests.
    """
    if isinstance(node, Compare):
        got = _field_compare(node)
        if got is None:
            return None
        region = compare_region(got[1], got[2])
        return None if region is None else (got[0], [region], True)
    eq = equality(node)
    if eq is not None:
        out = [compare_region("=", v) for v in eq[1]]
        if any(r is None for r in out):
            return None
        return eq[0], [r for r in out if r is not None], True
    if isinstance(node, Between) and not node.negated and isinstance(node.value, Field):
        try:
            lo, hi = literal_value(node.low), literal_value(node.high)
        except _NoLiteral:
            return None
        if lo is None or lo == "" or hi is None or hi == "":
            return node.value.path, [Region()], True  # a NULL bound: never TRUE
        if type(lo) in _NUMBER_TYPES and type(hi) in _NUMBER_TYPES:
            region = _number_between(lo, hi)
            return None if region is None else (node.value.path, [region], True)
        low, high = compare_region(">=", lo), compare_region("<=", hi)
        if low is None or high is None:
            return None
        # BETWEEN tests both bounds on the same element, so no array fallback.
        return node.value.path, [low.intersect(high, multi=False)], True
    if isinstance(node, Like) and not node.negated and not node.raw:
        prefix = like_prefix(node.pattern)
        if not prefix or not isinstance(node.value, Field):
            return None
        region = _prefix_region(prefix)
        if node.pattern != "^" + prefix:
            # More pattern follows the prefix ('^a.'): the region is a superset.
            region = attrs.evolve(region, exact=False)
        return node.value.path, [region], True
    if isinstance(node, BeginsWith) and not node.negated and isinstance(node.value, Field):
        try:
            items = [literal_value(item) for item in node.items]
        except _NoLiteral:
            return None
        if not all(isinstance(i, str) and i for i in items):
            return None
        return node.value.path, [_prefix_region(i) for i in items], True
    return None
