"""JMESPath projections of query results: ``Record.search`` and ``ResultSet.project``.

An AMPS select list (``select=``) keeps or drops fields of the stored document;
a projection reshapes it (renames, picks array elements, builds new objects), as
JMESPath does. Work and output per document are bounded, as filters are. Imports only
``errors``; ``jmespath`` parses and evaluates the expressions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import jmespath
from jmespath import visitor
from jmespath.exceptions import JMESPathError

from sowlib.errors import QueryOptionError

__all__ = [
    "MAX_EXPRESSION",
    "MAX_OUTPUT_VALUES",
    "MAX_STEPS",
    "compile_projection",
    "project",
    "search",
]

#: The longest projection accepted (the parser's work grows with the text).
MAX_EXPRESSION = 4096
#: Expression nodes one document's projection may evaluate (a step is 1-4 µs). A
#: projection over an array costs a few steps per element (``[*].{a: a, b: b}``, five, over
#: 60,000 elements fits); ``[@, @][][@, @][]...`` doubles its work per stage and stops
#: here (about a second) instead of running for minutes.
MAX_STEPS = 300_000
#: Values (objects, arrays and scalars, a value counted each time it appears) one
#: document's projection may produce: ``{a: @, b: @}`` chained 25 times is 33 million
#: (1.14 GB of JSON) built from 50 steps.
MAX_OUTPUT_VALUES = 1_000_000
# Results up to this many values are counted by a plain walk (see _check_output).
_PLAIN_WALK = 100_000
# An expression is quoted in an error up to this many characters.
_QUOTE = 200


def _quoted(expression: str) -> str:
    if len(expression) <= _QUOTE:
        return expression
    return f"{expression[:_QUOTE]}... ({len(expression)} characters)"


def _refuse(expression: str, reason: str) -> QueryOptionError:
    return QueryOptionError("project", _quoted(expression), reason)


class _Bounded(visitor.TreeInterpreter):  # type: ignore[misc]  # jmespath is untyped
    """The reference interpreter, counting every node it evaluates."""

    def __init__(self, expression: str) -> None:
        super().__init__()
        self.expression = expression
        self.left = MAX_STEPS

    def visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        self.left -= 1
        if self.left < 0:
            raise _refuse(self.expression, f"more than {MAX_STEPS} steps for one document")
        return super().visit(node, *args, **kwargs)


def _check_output(expression: str, value: Any) -> None:
    """Refuse a result that serializes to more than ``MAX_OUTPUT_VALUES`` values.

    A value counts each time it appears, as serializing repeats it, but a container
    shared by reference (``{a: @, b: @}``) is walked once: O(distinct containers +
    their items), however large the count. Small results (the usual case) are
    counted by a plain walk first, which is faster when nothing is shared.
    """
    left, plain = _PLAIN_WALK, [value]
    while plain:
        item = plain.pop()
        left -= 1
        if left < 0:
            break
        if isinstance(item, dict):
            plain.extend(item.values())
        elif isinstance(item, list):
            plain.extend(item)
    else:
        return
    sizes: dict[int, int] = {}  # id of a container -> values it serializes to (capped)
    cap = MAX_OUTPUT_VALUES + 1
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, ready = stack.pop()
        if not isinstance(item, dict | list) or (not ready and id(item) in sizes):
            continue
        items = item.values() if isinstance(item, dict) else item
        if not ready:
            stack.append((item, True))
            stack.extend((child, False) for child in items if isinstance(child, dict | list))
            continue
        total = 1
        for child in items:
            total += sizes[id(child)] if isinstance(child, dict | list) else 1
            if total >= cap:
                break
        sizes[id(item)] = min(total, cap)
    if sizes.get(id(value), 1) >= cap:
        reason = f"the result of one document has more than {MAX_OUTPUT_VALUES} values"
        raise _refuse(expression, reason)


@functools.lru_cache(maxsize=256)
def compile_projection(expression: str) -> Any:
    """The parsed JMESPath ``expression``, cached.

    Raises:
        QueryOptionError: not text, longer than ``MAX_EXPRESSION``, nesting too deep
            for the parser, or not JMESPath (the message quotes at most 200 characters).

    Example:
        >>> compile_projection("{id: orderId}").search({"orderId": 7})
        {'id': 7}
    """
    if not isinstance(expression, str) or not expression.strip():
        raise QueryOptionError("project", expression, "expected a JMESPath expression")
    if len(expression) > MAX_EXPRESSION:
        raise _refuse(expression, f"longer than {MAX_EXPRESSION} characters")
    try:
        return jmespath.compile(expression)
    except RecursionError:
        raise _refuse(expression, "nests too deep") from None
    except JMESPathError as exc:
        raise _refuse(expression, f"not JMESPath: {str(exc)[:_QUOTE]}") from None


def search(expression: str, doc: Any) -> Any:
    """``expression`` applied to one document (None where nothing matches).

    At most ``MAX_STEPS`` expression nodes are evaluated and the result holds at most
    ``MAX_OUTPUT_VALUES`` values; O(MAX_STEPS + MAX_OUTPUT_VALUES) per document.

    Raises:
        QueryOptionError: a bad expression, one that fails on this document (a function
            given the wrong kind of value), or one past the bounds above.
    """
    compiled = compile_projection(expression)
    try:
        result = _Bounded(expression).visit(compiled.parsed, doc)
    except RecursionError:
        raise _refuse(expression, "nests too deep to evaluate") from None
    except JMESPathError as exc:
        raise _refuse(expression, str(exc)[:_QUOTE]) from None
    _check_output(expression, result)
    return result


def project(docs: Iterable[Any], expression: str) -> list[Any]:
    """``expression`` applied to each document, in order.

    Raises:
        QueryOptionError: see :func:`search`.
    """
    compile_projection(expression)  # a bad expression fails even with no documents
    return [search(expression, doc) for doc in docs]
