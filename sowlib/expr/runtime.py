"""The one place for NULL, coercion, comparison and array semantics (spec §2-§4).

Every back-end helper that evaluates a value goes through these functions, so
the compiled filters, the reference interpreter and the index planner agree.
Imports only ``document`` and ``expr.operators``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from sowlib.document import MISSING, Element, canonical_text
from sowlib.expr.operators import I64_MAX, I64_MIN, U64_MAX

__all__ = [
    "MAX_NUMBER_TEXT",
    "affix_test",
    "arith",
    "as_float",
    "between",
    "compare_any",
    "compare_op",
    "compare_values",
    "elements",
    "first",
    "in_list",
    "is_nan",
    "is_null",
    "item_values",
    "like_test",
    "logic_not",
    "negate",
    "normalize",
    "order_key",
    "parse_number",
    "text_of",
    "to_logic",
    "to_number",
    "truthy",
]

_NAN = float("nan")
#: Longest text (in characters) that converts to a number (spec §2.2); longer text is a
#: non-numeric string. Bounds the work one value can cost a comparison or an index.
MAX_NUMBER_TEXT = 400
# Unambiguous (no two ways to split a run of digits), so a failed match is linear
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def is_null(v: Any) -> bool:
    """True for the NULL value: None, MISSING, ``''``, ``b''`` and ``[]`` (spec §2.3).

    A non-empty array is not NULL (even if its elements are).
    """
    return v is None or v is MISSING or v == "" or v == b"" or (type(v) is list and not v)


def normalize(v: Any) -> Any:
    """Return a scalar in the form the helpers expect, or None for NULL.

    ``bytes`` decode as UTF-8 with ``surrogateescape`` (strings are byte
    strings), ``''``/MISSING/objects become None, an :class:`Element` its text.
    Lists are returned unchanged (NULL when empty).
    """
    t = type(v)
    if t is str:
        return v or None
    if t is int or t is float or t is bool:
        return v
    if v is None or v is MISSING:
        return None
    if t is list:
        return v or None
    if t is bytes:
        return v.decode("utf-8", "surrogateescape") or None
    if isinstance(v, Element):
        return normalize(v.text)
    if isinstance(v, dict):
        return None
    if isinstance(v, str):
        return str(v) or None
    if isinstance(v, int | float):
        return v
    return None


def first(v: Any) -> Any:
    """The scalar functions and arithmetic see: an array's first element (spec §4)."""
    v = normalize(v)
    while type(v) is list:
        v = normalize(v[0])
    return v


def elements(v: Any) -> list[Any]:
    """The non-NULL scalars an array-aware operator tests (nested arrays flattened)."""
    v = normalize(v)
    if v is None:
        return []
    if type(v) is not list:
        return [v]
    out: list[Any] = []
    for item in v:
        out.extend(elements(item))
    return out


def parse_number(s: str) -> int | float | None:
    """Read a string as a number using literal spellings (spec §2.2), else None.

    No spaces, hex, ``inf`` or ``nan``. Integers beyond 64 bits become floats
    (infinite past the float range); text longer than :data:`MAX_NUMBER_TEXT`
    characters does not convert. O(min(len(s), MAX_NUMBER_TEXT)); never raises.
    """
    if len(s) > MAX_NUMBER_TEXT or _NUMBER.fullmatch(s) is None:
        return None
    if "." in s or "e" in s or "E" in s:
        return float(s)
    n = int(s)
    return n if I64_MIN <= n <= U64_MAX else float(s)


def as_float(x: int | float) -> float:
    """``float(x)``, with an integer beyond the float range as a signed infinity."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def to_number(v: Any) -> int | float | None:
    """Numeric view for arithmetic and numeric functions (spec §2.2, §2.6).

    Returns None for NULL, NaN for a string that does not convert, ``int`` for
    booleans; arrays give their first element.
    """
    v = first(v)
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[no-any-return]
    if v is None:
        return None
    if t is bool:
        return int(v)
    if t is str:
        n = parse_number(v)
        return _NAN if n is None else n
    return _NAN


def text_of(v: Any) -> str | None:
    """The textual form used by LIKE, BEGINS/ENDS WITH and TEXT ordering.

    Numbers use :func:`sowlib.document.canonical_text` (``5.0`` -> ``'5'``), so
    keys, indexes and filters agree; booleans are ``'1'``/``'0'``; arrays give
    their first element; NULL (and an integer too long to write out) gives None.
    """
    v = first(v)
    if type(v) is str:
        return v
    if v is None:
        return None
    try:
        return canonical_text(v)
    except ValueError:
        return None  # an integer past Python's digit limit for str(): no text, NULL


def _is_num(v: Any) -> bool:
    t = type(v)
    return t is int or t is float or t is bool


def compare_values(a: Any, b: Any) -> int | None:
    """Compare two non-array scalars by the rules of spec §2.4.

    Strings compare byte-wise (by code point, which is UTF-8 byte order),
    numbers numerically (int promoted to float when mixed), a string that
    converts compares numerically against a number, and a non-converting
    string is greater than any number.

    Returns:
        -1, 0 or 1; None when either side is NULL or NaN is involved.
    """
    a = normalize(a)
    b = normalize(b)
    if a is None or b is None:
        return None
    a_str, b_str = type(a) is str, type(b) is str
    if a_str and b_str:
        return int(a > b) - int(a < b)
    if a_str:
        na = parse_number(a)
        if na is None:
            return None if b != b else 1
        a = na
    elif b_str:
        nb = parse_number(b)
        if nb is None:
            return None if a != a else -1
        b = nb
    if not (_is_num(a) and _is_num(b)):
        return None
    if type(a) is float or type(b) is float:
        a, b = as_float(a), as_float(b)
        if a != a or b != b:
            return None
    return int(a > b) - int(a < b)


def compare_op(op: str, a: Any, b: Any) -> bool:
    """``a op b`` for two scalars; never NULL: a NULL side gives False (spec §2.5 [R]).

    NaN follows IEEE: every ordered comparison and ``=`` are False, ``!=`` is True.
    """
    c = compare_values(a, b)
    if c is None:
        return op == "!=" and normalize(a) is not None and normalize(b) is not None
    if op == "=":
        return c == 0
    if op == "!=":
        return c != 0
    if op == "<":
        return c < 0
    if op == "<=":
        return c <= 0
    if op == ">":
        return c > 0
    return c >= 0


def compare_any(op: str, a: Any, b: Any) -> bool:
    """Array-aware comparison: True when any pair of elements satisfies ``op`` (spec §4)."""
    rights = elements(b)
    return any(compare_op(op, x, y) for x in elements(a) for y in rights)


def item_values(items: Iterable[Any]) -> list[Any]:
    """The values an IN / BEGINS WITH list offers: array members contribute every element."""
    out: list[Any] = []
    for item in items:
        out.extend(elements(item))
    return out


def in_list(value: Any, items: Iterable[Any], negated: bool = False) -> bool:
    """``value [NOT] IN (items)`` (spec §3.2): any element of value equals any member.

    NULL members never match; a NULL value makes both forms False.
    """
    left = elements(value)
    if not left:
        return False
    members = item_values(items)
    found = any(compare_op("=", x, y) for x in left for y in members)
    return found != negated


def between(value: Any, low: Any, high: Any, negated: bool = False) -> bool:
    """``value [NOT] BETWEEN low AND high`` (inclusive; any element; spec §3.1).

    The bounds use their first element. A NULL value makes both forms False.
    """
    left = elements(value)
    if not left:
        return False
    lo, hi = first(low), first(high)
    found = any(compare_op(">=", x, lo) and compare_op("<=", x, hi) for x in left)
    return found != negated


def is_nan(v: Any) -> bool:
    """True when the value (any element of an array) is the NaN float."""
    return any(type(x) is float and x != x for x in elements(v))


def to_logic(v: Any) -> bool | None:
    """A value used as a condition (spec §2.5 [R]).

    Booleans are themselves; numbers are TRUE when non-zero; strings that
    convert likewise; NULL, NaN and other strings are NULL (None).
    """
    if v is True or v is False:
        return bool(v)
    n = first(v)
    if n is None:
        return None
    if type(n) is str:
        n = parse_number(n)
        if n is None:
            return None
    if type(n) is float and n != n:
        return None
    return bool(n)


def truthy(v: Any) -> bool:
    """Whether a filter result counts as a match: exactly TRUE (spec §1)."""
    return to_logic(v) is True


def logic_not(v: Any) -> bool | None:
    """``NOT v``: NOT NULL is NULL (spec §2.5 [R])."""
    b = to_logic(v)
    return None if b is None else not b


def _wrap(r: int, unsigned: bool) -> int:
    if I64_MIN <= r <= I64_MAX:
        return r
    if unsigned:
        return r % (U64_MAX + 1)
    return ((r - I64_MIN) % (U64_MAX + 1)) + I64_MIN


def _int_arith(op: str, a: int, b: int) -> int | None:
    unsigned = a > I64_MAX or b > I64_MAX
    if op == "+":
        return _wrap(a + b, unsigned)
    if op == "-":
        return _wrap(a - b, unsigned)
    if op == "*":
        return _wrap(a * b, unsigned)
    if b == 0:
        return None  # integer division by zero: NULL ([R] 7)
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    if op == "/":
        return _wrap(q, unsigned)
    return _wrap(a - b * q, unsigned)


def _float_arith(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            if a == 0 or a != a:
                return _NAN
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if b == 0 or math.isinf(a):
        return _NAN
    return math.fmod(a, b)


def arith(op: str, a: Any, b: Any) -> int | float | None:
    """``a op b`` for ``+ - * / %`` with the rules of spec §2.6.

    NULL operand -> NULL; NaN (or a non-numeric string) -> NaN; float if any
    operand is float; otherwise 64-bit integer arithmetic: C division
    (truncating), remainder with the sign of the left operand, NULL for
    integer division by zero, two's-complement wrap on overflow (unsigned when
    an operand is above the signed maximum).
    """
    x = to_number(a)
    if x is None:
        return None
    y = to_number(b)
    if y is None:
        return None
    if type(x) is int and type(y) is int:
        return _int_arith(op, x, y)
    return _float_arith(op, as_float(x), as_float(y))


def negate(v: Any) -> int | float | None:
    """Unary minus: NULL stays NULL, integers wrap at 64 bits."""
    x = to_number(v)
    if x is None:
        return None
    if type(x) is int:
        return _wrap(-x, x > I64_MAX)
    return -x


def order_key(v: Any) -> tuple[int, Any, Any]:
    """A sort key for the mixed-type OrderBy of spec §13.3 [R].

    Numbers (and strings that convert) order numerically, then NaN, then
    non-numeric strings byte-wise. The caller places NULL (this returns a key
    for NULL only to stay total: after everything).
    """
    v = first(v)
    if v is None:
        return (3, 0, "")
    if type(v) is str:
        n = parse_number(v)
        if n is None:
            return (2, 0, v)
        v, tie = n, v
    else:
        tie = ""
    if type(v) is float and v != v:
        return (1, 0, tie)
    return (0, v, tie)


def affix_test(value: Any, items: Iterable[Any], negated: bool, ends: bool) -> bool:
    """``value [NOT] BEGINS/ENDS WITH (items)`` on text (spec §3.4); NULL value: False."""
    texts = [s for s in (text_of(x) for x in elements(value)) if s is not None]
    if not texts:
        return False
    affixes = tuple(a for a in (text_of(x) for x in item_values(items)) if a is not None)
    if ends:
        found = any(s.endswith(affixes) for s in texts)
    else:
        found = any(s.startswith(affixes) for s in texts)
    return found != negated


def like_test(value: Any, matcher: Callable[[str], bool], negated: bool) -> bool:
    """``value [NOT] LIKE pattern`` given the pattern's matcher; any element; NULL: False."""
    texts = [s for s in (text_of(x) for x in elements(value)) if s is not None]
    if not texts:
        return False
    return any(matcher(s) for s in texts) != negated
