"""The shape of a filter that is one equality: ``/f = literal`` or ``/f IN (literals)``.

Read once when a filter is compiled (:attr:`sowlib.expr.Filter.equality`), so a query
planner finds such a filter's field and literals without walking its tree again.
Imports only ``paths`` and ``expr.nodes``.
"""

from __future__ import annotations

from typing import Any

from sowlib.expr.nodes import Compare, Field, InList, Literal, Neg, Node
from sowlib.paths import FieldPath

__all__ = ["NOT_CONSTANT", "Equality", "constant", "equality_shape"]

#: ``(path, literals)``: the field and the literals it is compared to.
Equality = tuple[FieldPath, tuple[Any, ...]]

#: What :func:`constant` gives for an operand that is not a constant (a literal's value
#: may be None, NULL: so a marker, compared with ``is``).
NOT_CONSTANT: Any = object()


def constant(node: Node) -> Any:
    """The constant ``node`` stands for (a literal, or a minus before a number literal),
    else a marker that is no literal value (compare it with ``is`` to :data:`NOT_CONSTANT`)."""
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Neg) and isinstance(node.operand, Literal):
        value = node.operand.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
    return NOT_CONSTANT


def equality_shape(node: Node) -> Equality | None:
    """``(path, literals)`` when ``node`` is ``/f = lit`` (either side) or ``/f IN (lit,
    ...)`` (not negated), else None; O(items)."""
    if isinstance(node, Compare) and node.op == "=":
        if isinstance(node.left, Field):
            path, other = node.left.path, node.right
        elif isinstance(node.right, Field):
            path, other = node.right.path, node.left
        else:
            return None
        value = constant(other)
        return None if value is NOT_CONSTANT else (path, (value,))
    if isinstance(node, InList) and not node.negated and isinstance(node.value, Field):
        values = tuple(map(constant, node.items))
        if any(v is NOT_CONSTANT for v in values):
            return None
        return node.value.path, values
    return None
