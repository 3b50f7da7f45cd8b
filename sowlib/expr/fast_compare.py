# mypy: disable-error-code="operator"
# (mypy reads ``d.get(k)`` on a dict narrowed from Any as "Any | None", though the
# comparisons below only run after a type test has excluded None)
"""Closures for ``field <op> literal``, the commonest predicate: the evaluation fast path.

One closure per operator and literal type, because a call through a shared operator
function on every evaluation costs more than the comparison itself; without these
the compiled filters miss the evaluation target in ``docs/performance.md``. Fast
path: a non-empty string against a string literal, an int/float (below
:data:`~sowlib.expr.operators.SAFE_INT` in magnitude) against a number literal;
anything else (NULL, arrays, booleans, huge integers, mixed types, XML elements)
takes the general rule ``runtime.compare_any``. A one-step path reads a dict
document with ``d.get(name)`` in the closure itself (a missing field reads as None,
the same NULL), saving the getter call; other documents and paths use the path's
getter. ``tests/expr/test_fast_compare.py`` checks every closure against
``runtime.compare_any``. Imports only ``expr`` modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sowlib.expr import runtime
from sowlib.expr.context import EvalContext
from sowlib.expr.operators import SAFE_INT

__all__ = ["field_compare"]

Compiled = Callable[[Any, EvalContext | None], Any]
Getter = Callable[[Any], Any]

_slow = runtime.compare_any

# String literal: (key, getter, literal) -> closure. ``k`` is the one-step key.
_STR_KEY: dict[str, Callable[[str, Getter, str], Compiled]] = {
    "=": lambda k, g, s: (
        lambda d, c: (
            v == s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow("=", v, s)
        )
    ),
    "!=": lambda k, g, s: (
        lambda d, c: (
            v != s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow("!=", v, s)
        )
    ),
    "<": lambda k, g, s: (
        lambda d, c: (
            v < s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow("<", v, s)
        )
    ),
    "<=": lambda k, g, s: (
        lambda d, c: (
            v <= s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow("<=", v, s)
        )
    ),
    ">": lambda k, g, s: (
        lambda d, c: (
            v > s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow(">", v, s)
        )
    ),
    ">=": lambda k, g, s: (
        lambda d, c: (
            v >= s
            if type(v := d.get(k) if type(d) is dict else g(d)) is str and v
            else _slow(">=", v, s)
        )
    ),
}
_STR_GET: dict[str, Callable[[Getter, str], Compiled]] = {
    "=": lambda g, s: lambda d, c: v == s if type(v := g(d)) is str and v else _slow("=", v, s),
    "!=": lambda g, s: lambda d, c: v != s if type(v := g(d)) is str and v else _slow("!=", v, s),
    "<": lambda g, s: lambda d, c: v < s if type(v := g(d)) is str and v else _slow("<", v, s),
    "<=": lambda g, s: lambda d, c: v <= s if type(v := g(d)) is str and v else _slow("<=", v, s),
    ">": lambda g, s: lambda d, c: v > s if type(v := g(d)) is str and v else _slow(">", v, s),
    ">=": lambda g, s: lambda d, c: v >= s if type(v := g(d)) is str and v else _slow(">=", v, s),
}

# Number literal n (an int below SAFE_INT, or a float) and its float nf: an int value
# compares exactly with an int literal; an int value below 2**53 equals its float
# promotion, so it compares directly with a float literal too.
_NUM_KEY: dict[str, Callable[[str, Getter, Any, float], Compiled]] = {
    "=": lambda k, g, n, nf: (
        lambda d, c: (
            v == nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("=", v, n)
        )
    ),
    "!=": lambda k, g, n, nf: (
        lambda d, c: (
            v != nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("!=", v, n)
        )
    ),
    "<": lambda k, g, n, nf: (
        lambda d, c: (
            v < nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("<", v, n)
        )
    ),
    "<=": lambda k, g, n, nf: (
        lambda d, c: (
            v <= nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("<=", v, n)
        )
    ),
    ">": lambda k, g, n, nf: (
        lambda d, c: (
            v > nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow(">", v, n)
        )
    ),
    ">=": lambda k, g, n, nf: (
        lambda d, c: (
            v >= nf
            if (t := type(v := d.get(k) if type(d) is dict else g(d))) is float
            or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow(">=", v, n)
        )
    ),
}
_NUM_GET: dict[str, Callable[[Getter, Any, float], Compiled]] = {
    "=": lambda g, n, nf: (
        lambda d, c: (
            v == nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("=", v, n)
        )
    ),
    "!=": lambda g, n, nf: (
        lambda d, c: (
            v != nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("!=", v, n)
        )
    ),
    "<": lambda g, n, nf: (
        lambda d, c: (
            v < nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("<", v, n)
        )
    ),
    "<=": lambda g, n, nf: (
        lambda d, c: (
            v <= nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow("<=", v, n)
        )
    ),
    ">": lambda g, n, nf: (
        lambda d, c: (
            v > nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow(">", v, n)
        )
    ),
    ">=": lambda g, n, nf: (
        lambda d, c: (
            v >= nf
            if (t := type(v := g(d))) is float or (t is int and -SAFE_INT < v < SAFE_INT)
            else _slow(">=", v, n)
        )
    ),
}


def field_compare(op: str, key: str | None, getter: Getter, lit: Any) -> Compiled | None:
    """The closure for ``field op lit``, or None when no fast form exists for ``lit``.

    Args:
        op: a canonical comparison operator (``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``).
        key: the field's name when its path is one plain step, else None.
        getter: the path's resolver (``FieldPath.getter``).
        lit: the literal's value (not NULL).
    """
    if isinstance(lit, str):
        return _STR_GET[op](getter, lit) if key is None else _STR_KEY[op](key, getter, lit)
    if (isinstance(lit, int) and not isinstance(lit, bool) and -SAFE_INT < lit < SAFE_INT) or (
        isinstance(lit, float) and lit == lit
    ):
        nf = float(lit)
        if key is None:
            return _NUM_GET[op](getter, lit, nf)
        return _NUM_KEY[op](key, getter, lit, nf)
    return None
