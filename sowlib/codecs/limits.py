"""Documented limits on what one decoded message may hold (``docs/errors.md``, Limits).

Deep nesting is refused at the door so that every later walk over a document
(delta merge, copying, rendering, filters) stays within Python's stack. Imports
only ``errors``; never ``expr`` or ``storage``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sowlib.errors import DecodeError

__all__ = ["MAX_DEPTH", "check_depth", "document_depth"]

#: Deepest nesting of objects, arrays, maps and elements in one document (a flat
#: ``{"a": 1}`` has depth 1). Below orjson's own rendering limit and far below
#: Python's recursion limit, so merge and encode never fail on an accepted document.
MAX_DEPTH = 200


def document_depth(doc: Any, limit: int = MAX_DEPTH) -> int:
    """The nesting depth of ``doc``, or ``limit + 1`` as soon as it exceeds ``limit``.

    Iterative (no recursion) and O(number of containers). Scalars have depth 0.

    Example:
        >>> document_depth({"a": [1, {"b": 2}]})
        3
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > deepest:
            deepest = depth
            if depth > limit:
                return limit + 1
        for child in children:
            if isinstance(child, dict | list | tuple):
                push((child, depth + 1))
    return deepest


def check_depth(doc: Any, message_type: str, data: object) -> Any:
    """Return ``doc``, or raise when it nests deeper than :data:`MAX_DEPTH`.

    Raises:
        DecodeError: naming the limit.
    """
    if document_depth(doc) > MAX_DEPTH:
        raise DecodeError(
            message_type, data, f"the document nests deeper than {MAX_DEPTH} levels (the limit)"
        )
    return doc
