"""Byte patterns that every JSON message matching a filter must contain (spec §2.4, §7).

A full scan decodes every message. For a filter with an AND-ed equality on a field
(``/qty = 7``, ``/side IN ('B', 'S')``), most messages can be ruled out from their
raw bytes: a JSON message whose field holds ``7`` contains ``"qty"``, a colon, and a
number token whose significant digits start with ``7``. :func:`json_patterns` turns
such clauses into regular expressions over the raw bytes that are *necessary*
conditions: a message that matches the filter always has a match in its bytes (or
holds a ``\\u`` escape, see :data:`ESCAPE`); a message with a match may still fail
the filter and is evaluated in full.

What makes each pattern a superset of the evaluator's answer:

- keys and string values may be written with ``\\u`` escapes (four hex digits after
  ``\\u``): a message holding ``\\u`` anywhere is always a candidate (:data:`ESCAPE`);
- a number equal to the literal is written with the literal's significant digits,
  possibly split by a decimal point, padded with zeros, or scaled by an exponent
  (``7``, ``7.0``, ``70e-1``, ``0.7e1``); a token of 16 or more number characters
  may round to the literal and is always a candidate;
- strings convert to numbers (spec §2.2), so any string value is a candidate for a
  number literal or a numeric string literal; a non-numeric string literal equals
  only that string (written plainly, or with an escape);
- arrays and objects (``[``, ``{``) and ``true``/``false`` are always candidates;
- the field's name is matched wherever it appears (nested objects, longer names
  ending with it): extra candidates, never missing ones.

:func:`may_match` is the reference a test checks the patterns against.
Imports only ``expr.nodes``, ``index.clauses`` and ``index.values``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sowlib.expr.nodes import Node
from sowlib.index.clauses import conjuncts, equality
from sowlib.index.values import EXACT_LIMIT, to_number

__all__ = ["ESCAPE", "json_patterns", "may_match"]

#: A message holding this may spell a key or a string with escapes: always a candidate.
ESCAPE = re.compile(rb"\\u[0-9a-fA-F]{4}")
#: Most literals an IN clause may list and still get a pattern.
MAX_ITEMS = 16

_WS = rb"[ \t\n\r]*"
# Any token this long may be a number that rounds to the literal.
_LONG = rb"[-+0-9.eE]{16}"
_ALWAYS = rb"\[|\{|[tf]"
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _digits(value: int | float) -> str:
    """The significant digits of ``abs(value)`` (no leading or trailing zeros)."""
    text = repr(abs(value)) if isinstance(value, float) else str(abs(value))
    mantissa = text.split("e")[0].split("E")[0].replace(".", "")
    return mantissa.strip("0")


def _number(value: int | float) -> bytes | None:
    """A pattern every JSON number token equal to ``value`` matches (or None)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if abs(value) >= EXACT_LIMIT:
        return None
    sign = b"-" if value < 0 else b""
    digits = _digits(value)
    if not digits:  # zero, either sign
        return rb"-?[0.]*(?:[eE]|(?![0-9.]))"
    body = rb"\.?".join(re.escape(d.encode()) for d in digits)
    return sign + rb"0*\.?0*" + body + rb"(?:[0.]*(?![0-9eE.])|[0-9.]*[eE])"


def _value(literal: Any) -> bytes | None:
    """The alternatives a field's value may start with to equal ``literal`` (or None)."""
    if isinstance(literal, bool) or literal is None:
        return None
    if isinstance(literal, int | float):
        number = _number(literal)
        return None if number is None else b"|".join((number, _LONG, b'"', _ALWAYS))
    if not isinstance(literal, str) or literal == "":
        return None
    alternatives = [rb'"[^"\\]*\\', _ALWAYS]  # a string with an escape; arrays, objects
    as_number = to_number(literal)
    if as_number is not None:
        number = _number(as_number) if not isinstance(as_number, bool) else None
        if number is None:
            return None
        alternatives += [number, _LONG, b'"']
    elif not _NEEDS_ESCAPE.search(literal):
        alternatives.append(b'"' + re.escape(literal.encode()) + b'"')
    return b"|".join(alternatives)


def _clause(node: Node) -> re.Pattern[bytes] | None:
    eq = equality(node)
    if eq is None:
        return None
    path, literals = eq
    if not path.steps or not 0 < len(literals) <= MAX_ITEMS:
        return None
    if any(step.index is not None or step.name is None for step in path.steps):
        return None
    name = path.steps[-1].name
    if not name or _NEEDS_ESCAPE.search(name):
        return None
    values = [_value(lit) for lit in literals]
    if any(v is None for v in values):
        return None
    # The key's closing quote, not its opening one, starts the pattern: the regular
    # expression engine skips ahead to its first character, and a quote is common.
    key = re.escape(name.encode()) + b'"' + _WS + b":" + _WS
    return re.compile(key + b"(?:" + b"|".join(v for v in values if v is not None) + b")")


def json_patterns(node: Node) -> list[re.Pattern[bytes]]:
    """One pattern per AND-ed equality clause of ``node`` that can be read from bytes.

    A JSON message matching the filter has a match of *every* returned pattern in
    its bytes, or holds :data:`ESCAPE`. Empty when no clause qualifies.

    Example:
        >>> from sowlib.expr import compile_filter
        >>> [p.pattern[:5] for p in json_patterns(compile_filter("/qty = 7").node)]
        [b'qty"[']
    """
    out = []
    for clause in conjuncts(node):
        pattern = _clause(clause)
        if pattern is not None:
            out.append(pattern)
    return out


def may_match(patterns: Sequence[re.Pattern[bytes]], message: bytes) -> bool:
    """The reference test of one message: could it match the filter? (never a false no)."""
    if ESCAPE.search(message) is not None:
        return True
    return all(p.search(message) is not None for p in patterns)
