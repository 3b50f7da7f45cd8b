"""JMESPath projections of query results: ``Record.search`` and ``ResultSet.project``.

An AMPS select list (``select=``) keeps or drops fields of the stored document;
a projection reshapes it (renames, picks array elements, builds new objects), as
JMESPath does. Imports only ``errors``; ``jmespath`` parses the expressions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from sowlib.errors import QueryOptionError

__all__ = ["MAX_EXPRESSION", "compile_projection", "project", "search"]

#: The longest projection accepted (the parser's work grows with the text).
MAX_EXPRESSION = 4096


@functools.lru_cache(maxsize=256)
def compile_projection(expression: str) -> Any:
    """The parsed JMESPath ``expression``, cached.

    Raises:
        QueryOptionError: not text, longer than ``MAX_EXPRESSION`` or not JMESPath.

    Example:
        >>> compile_projection("{id: orderId}").search({"orderId": 7})
        {'id': 7}
    """
    if not isinstance(expression, str) or not expression.strip():
        raise QueryOptionError("project", expression, "expected a JMESPath expression")
    if len(expression) > MAX_EXPRESSION:
        raise QueryOptionError(
            "project", expression[:40] + "...", f"longer than {MAX_EXPRESSION} characters"
        )
    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        raise QueryOptionError("project", expression, f"not JMESPath: {exc}") from exc


def search(expression: str, doc: Any) -> Any:
    """``expression`` applied to one document (None where nothing matches).

    Raises:
        QueryOptionError: a bad expression, or one that fails on this document
            (a function given the wrong kind of value).
    """
    compiled = compile_projection(expression)
    try:
        return compiled.search(doc)
    except JMESPathError as exc:
        raise QueryOptionError("project", expression, str(exc)) from exc


def project(docs: Iterable[Any], expression: str) -> list[Any]:
    """``expression`` applied to each document, in order.

    Raises:
        QueryOptionError: see :func:`search`.
    """
    compile_projection(expression)  # a bad expression fails even with no documents
    return [search(expression, doc) for doc in docs]
