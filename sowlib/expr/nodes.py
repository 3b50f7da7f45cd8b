"""The filter language's abstract syntax tree: a closed union of frozen nodes.

Back-ends (``to_python``, ``to_text``, ``spark.columns``, the index planner)
``match`` on :data:`Node` and end in ``assert_never``. ``start``/``end`` are
offsets into the filter text and take no part in equality, so
``parse_filter(to_text(n)) == n``. Imports only ``paths``.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from sowlib.paths import FieldPath

__all__ = [
    "ARITH_OPS",
    "COMPARE_OPS",
    "And",
    "Arith",
    "BeginsWith",
    "Between",
    "Call",
    "Compare",
    "EndsWith",
    "Field",
    "InList",
    "IsNaN",
    "IsNull",
    "Like",
    "Literal",
    "Neg",
    "Node",
    "Not",
    "Or",
    "walk",
]

#: Canonical comparison operators (``==`` parses to ``=``, ``<>`` to ``!=``).
COMPARE_OPS = ("=", "!=", "<", "<=", ">", ">=")
#: Canonical arithmetic operators (``MOD`` parses to ``%``).
ARITH_OPS = ("+", "-", "*", "/", "%")


def _pos() -> int:
    return attrs.field(default=0, eq=False, kw_only=True, repr=False)


@attrs.frozen
class Literal:
    """A number, a string or NULL (``value is None``). ``''`` parses to NULL."""

    value: int | float | str | None
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Field:
    """A field path such as ``/order/price``."""

    path: FieldPath
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Neg:
    """Unary minus."""

    operand: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Arith:
    """``left op right`` with ``op`` in :data:`ARITH_OPS`."""

    op: str
    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Compare:
    """``left op right`` with ``op`` in :data:`COMPARE_OPS`."""

    op: str
    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Between:
    """``value [NOT] BETWEEN low AND high`` (inclusive)."""

    value: Node
    low: Node
    high: Node
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class InList:
    """``value [NOT] IN (item, ...)``."""

    value: Node
    items: tuple[Node, ...]
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Like:
    """``value [NOT] LIKE 'pattern'``; ``raw`` for ``r'...'`` (literal search, no regex)."""

    value: Node
    pattern: str
    raw: bool = False
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class BeginsWith:
    """``value [NOT] BEGINS WITH (prefix, ...)``."""

    value: Node
    items: tuple[Node, ...]
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class EndsWith:
    """``value [NOT] ENDS WITH (suffix, ...)``."""

    value: Node
    items: tuple[Node, ...]
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class IsNull:
    """``value IS [NOT] NULL``."""

    value: Node
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class IsNaN:
    """``value IS [NOT] NAN``."""

    value: Node
    negated: bool = False
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Not:
    """Logical ``NOT operand``."""

    operand: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class And:
    """Logical ``left AND right``."""

    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Or:
    """Logical ``left OR right``."""

    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Call:
    """A function call; ``name`` is upper case (``TRUE``/``FALSE`` become ``TRUE_VALUE()``...)."""

    name: str
    args: tuple[Node, ...]
    start: int = _pos()
    end: int = _pos()


Node: TypeAlias = (
    Literal
    | Field
    | Neg
    | Arith
    | Compare
    | Between
    | InList
    | Like
    | BeginsWith
    | EndsWith
    | IsNull
    | IsNaN
    | Not
    | And
    | Or
    | Call
)


def walk(node: Node) -> list[Node]:
    """Return ``node`` and every node below it, parents first."""
    out: list[Node] = []
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        match n:
            case Literal() | Field():
                continue  # leaves: nothing below them
            case Neg(operand=o) | Not(operand=o):
                stack.append(o)
            case (
                Arith(left=a, right=b)
                | Compare(left=a, right=b)
                | And(left=a, right=b)
                | Or(left=a, right=b)
            ):
                stack.extend((b, a))
            case Between(value=v, low=lo, high=hi):
                stack.extend((hi, lo, v))
            case (
                InList(value=v, items=items)
                | BeginsWith(value=v, items=items)
                | EndsWith(value=v, items=items)
            ):
                stack.extend(reversed(items))
                stack.append(v)
            case Like(value=v) | IsNull(value=v) | IsNaN(value=v):
                stack.append(v)
            case Call(args=args):
                stack.extend(reversed(args))
    return out
