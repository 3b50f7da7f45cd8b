"""The filter language's abstract syntax tree: a closed union of frozen nodes.

Back-ends (``to_python``, ``to_text``, ``spark.columns``, the index planner)
``match`` on :data:`Node` and end in ``assert_never``. ``start``/``end`` are
offsets into the filter text and take no part in equality, so
``parse_filter(to_text(n)) == n``. Imports only ``paths``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from sowlib.paths import FieldPath

__all__ = [
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
    "arith_chain",
    "chain",
    "walk",
]


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


class _Spine:
    """``==``, ``hash`` and ``repr`` of a left-nested chain node, read along its spine.

    attrs would recurse once per clause of ``a AND b AND ...`` (or per operator of a
    long arithmetic chain); these give the same results in a loop.
    """

    __slots__ = ()

    def _parts(self) -> tuple[Any, ...]:
        if isinstance(self, Arith):
            first, steps = arith_chain(self)
            return (first, *steps)
        assert isinstance(self, And | Or)
        return tuple(chain(self))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Spine)
        return self._parts() == other._parts()

    def __ne__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._parts()))

    def __reduce__(self) -> tuple[Any, ...]:
        # pickle and copy would recurse once per clause through attrs' state: a chain
        # pickles flat, as its first operand and one (fields..., start, end) per link
        cls = type(self)
        links: list[tuple[Any, ...]] = []
        n: Node = self  # type: ignore[assignment]
        while type(n) is cls:
            assert isinstance(n, Arith | And | Or)
            head = (n.op,) if isinstance(n, Arith) else ()
            links.append((*head, n.right, n.start, n.end))
            n = n.left
        links.reverse()
        return (_unspine, (cls, n, tuple(links)))

    def __repr__(self) -> str:
        name = type(self).__name__
        if isinstance(self, Arith):
            first, steps = arith_chain(self)
            heads = "".join(f"{name}(op={op!r}, left=" for op, _ in reversed(steps))
            return heads + repr(first) + "".join(f", right={r!r})" for _, r in steps)
        assert isinstance(self, And | Or)
        first, *rest = chain(self)
        return f"{name}(left=" * len(rest) + repr(first) + "".join(f", right={r!r})" for r in rest)


def _unspine(cls: type[Any], first: Node, links: tuple[tuple[Any, ...], ...]) -> Node:
    """The chain that :meth:`_Spine.__reduce__` took apart, rebuilt in a loop."""
    node = first
    for *head, right, start, end in links:
        node = cls(*head, node, right, start=start, end=end)
    return node


@attrs.frozen(eq=False, repr=False)
class Arith(_Spine):
    """``left op right`` with ``op`` in :data:`~sowlib.expr.operators.ARITHMETIC`."""

    op: str
    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen
class Compare:
    """``left op right`` with ``op`` in :data:`~sowlib.expr.operators.COMPARISONS`."""

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


@attrs.frozen(eq=False, repr=False)
class And(_Spine):
    """Logical ``left AND right``."""

    left: Node
    right: Node
    start: int = _pos()
    end: int = _pos()


@attrs.frozen(eq=False, repr=False)
class Or(_Spine):
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


def chain(node: And | Or) -> list[Node]:
    """The operands of the left-nested ``And`` (or ``Or``) chain at ``node``, left to right.

    ``a AND b AND c`` parses as ``And(And(a, b), c)``: back-ends read such a chain with
    this loop instead of recursing once per clause, so its length is not limited by the
    Python stack. O(length of the chain).
    """
    cls = type(node)
    rights: list[Node] = []
    n: Node = node
    while type(n) is cls:
        assert isinstance(n, And | Or)
        rights.append(n.right)
        n = n.left
    rights.append(n)
    rights.reverse()
    return rights


def arith_chain(node: Arith) -> tuple[Node, list[tuple[str, Node]]]:
    """``(first, [(op, operand), ...])`` of the left-nested arithmetic at ``node``.

    ``a - b * c + d`` is ``first = a`` then ``('-', b * c)``, ``('+', d)``: applied left
    to right they give the node's value. Iterative, as :func:`chain`.
    """
    steps: list[tuple[str, Node]] = []
    n: Node = node
    while isinstance(n, Arith):
        steps.append((n.op, n.right))
        n = n.left
    steps.reverse()
    return n, steps


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
