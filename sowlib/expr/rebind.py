"""A copy of a filter tree with one field path replaced by another.

The vector engine (:mod:`sowlib.expr.vector`) evaluates a one-field sub-expression on
a document holding only that field's value; it reads the value through a path of its
own. Imports only ``expr.nodes`` and ``paths``.
"""

from __future__ import annotations

from typing import Any

import attrs

from sowlib.expr.nodes import Field, Node
from sowlib.paths import FieldPath

__all__ = ["rebind"]


def rebind(node: Node, old: FieldPath, new: FieldPath) -> Node:
    """``node`` with every ``Field(old)`` read as ``Field(new)``; O(size of the tree).

    Recursive: callers bound the size of what they rebind.

    Example:
        >>> a, v = parse_path("/a"), parse_path("/v")
        >>> to_text(rebind(parse_filter("/a > 1"), a, v))  # doctest: +SKIP
        '/v > 1'
    """
    if isinstance(node, Field):
        return Field(new, start=node.start, end=node.end) if node.path == old else node
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        if isinstance(value, tuple):
            changes[field.alias] = tuple(rebind(v, old, new) for v in value)
        elif attrs.has(type(value)):
            changes[field.alias] = rebind(value, old, new)
    return attrs.evolve(node, **changes) if changes else node
