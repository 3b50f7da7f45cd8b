"""The one function registry: name, arity, argument kinds, implementation, Spark name, docs.

The parser checks names and arities here, ``to_python`` and the reference
interpreter call :func:`call_function`, the Spark back-end reads ``spark``,
and :func:`markdown_table` generates the docs' function table. Imports only
``expr`` modules (runtime, like, context, fn_*).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from sowlib.errors import SowError
from sowlib.expr import fn_math as m
from sowlib.expr import fn_misc as x
from sowlib.expr import fn_text as t
from sowlib.expr.context import EvalContext
from sowlib.expr.runtime import first, normalize, text_of, to_number

__all__ = [
    "CONVERTERS",
    "FUNCTIONS",
    "FunctionSpec",
    "apply_impl",
    "call_function",
    "markdown_table",
]

#: How an argument of each kind is prepared before the implementation sees it.
CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "text": text_of,
    "number": to_number,
    "any": first,
    "array": normalize,
    "condition": first,
}


@attrs.frozen
class FunctionSpec:
    """One filter function.

    Attributes:
        name: upper-case name.
        min_args: fewest arguments.
        max_args: most arguments, -1 for any number.
        kinds: argument kinds (``text``, ``number``, ``any``, ``array``,
            ``condition``); the last repeats for variadic functions.
        impl: the Python implementation (receives converted arguments; context
            functions receive only the :class:`EvalContext`).
        returns: result kind, for documentation and the Spark back-end.
        spark: the Spark SQL function with the same semantics, or None.
        doc: one line for the docs.
        deterministic: False for clock-reading functions.
        context: reads the evaluation context instead of arguments.
        lazy: arguments are evaluated by the function (``IF``).
        strict: a NULL (converted) argument makes the result NULL without a call.
    """

    name: str
    min_args: int
    max_args: int
    kinds: tuple[str, ...]
    impl: Callable[..., Any]
    returns: str
    spark: str | None
    doc: str
    deterministic: bool = True
    context: bool = False
    lazy: bool = False
    strict: bool = True

    def kind_of(self, index: int) -> str:
        """The kind of argument ``index``."""
        return self.kinds[min(index, len(self.kinds) - 1)]

    def arity_text(self) -> str:
        """``'2'``, ``'2 to 3'`` or ``'at least 1'``."""
        if self.max_args < 0:
            return f"at least {self.min_args}"
        if self.min_args == self.max_args:
            return str(self.min_args)
        return f"{self.min_args} to {self.max_args}"

    def signature(self) -> str:
        """``SUBSTR(text, number[, number])``."""
        shown = [self.kind_of(i) for i in range(max(self.min_args, len(self.kinds)))]
        head = ", ".join(shown[: self.min_args])
        rest = shown[self.min_args :]
        if self.max_args < 0:
            rest = [self.kind_of(len(shown)) + ", ..."] if not rest else [*rest, "..."]
        opt = "".join(f"[, {k}]" if head or i else f"[{k}]" for i, k in enumerate(rest))
        return f"{self.name}({head}{opt})"


def _nullable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a non-strict text function whose first argument NULL means NULL."""

    def call(s: Any, *rest: Any) -> Any:
        return None if s is None else fn(s, *rest)

    call.__name__ = fn.__name__
    return call


def _if(cond: Any, a: Any, b: Any) -> Any:
    raise AssertionError("IF is compiled lazily by each back-end")


_T, _N, _A = "text", "number", "any"
_F: list[FunctionSpec] = []


def _fn(
    name: str,
    arity: tuple[int, int],
    kinds: Sequence[str],
    impl: Callable[..., Any],
    returns: str,
    spark: str | None,
    doc: str,
    **flags: bool,
) -> None:
    _F.append(
        FunctionSpec(name, arity[0], arity[1], tuple(kinds), impl, returns, spark, doc, **flags)
    )


# strings (§5.1, §5.2)
_fn("INSTR", (2, 2), [_T, _T], t.instr, _N, None, "1-based byte position of sub in s; 0 if absent")
_fn("INSTR_I", (2, 2), [_T, _T], t.instr_i, _N, None, "INSTR ignoring ASCII case")
_fn("STREQUAL_I", (2, 2), [_T, _T], t.strequal_i, _N, None, "TRUE when equal ignoring ASCII case")
_fn("LENGTH", (1, 1), [_T], t.length, _N, "octet_length", "length in bytes")
_fn(
    "CONCAT",
    (1, -1),
    [_T],
    t.concat,
    _T,
    None,
    "concatenated text; NULL arguments add nothing",
    strict=False,
)
_fn("UPPER", (1, 1), [_T], t.upper, _T, None, "ASCII upper case")
_fn("LOWER", (1, 1), [_T], t.lower, _T, None, "ASCII lower case")
_fn(
    "REPLACE",
    (3, 3),
    [_T],
    t.replace,
    _T,
    None,
    "every literal occurrence of find replaced",
    strict=False,
)
_fn(
    "REGEXP_REPLACE",
    (3, 3),
    [_T],
    t.regexp_replace,
    _T,
    None,
    "every PCRE match replaced by literal text",
    strict=False,
)
_fn(
    "SUBSTR",
    (2, 3),
    [_T, _N, _N],
    t.substr,
    _T,
    None,
    "bytes from 1-based start (negative: from the end), optional length",
)
_fn("LEFT", (2, 2), [_T, _N], t.left, _T, None, "first n bytes")
_fn("RIGHT", (2, 2), [_T, _N], t.right, _T, None, "last n bytes")
_fn(
    "TRIM",
    (1, 2),
    [_T, _T],
    _nullable(t.trim),
    _T,
    None,
    "strip characters of set (default space) from both ends",
    strict=False,
)
_fn("LTRIM", (1, 2), [_T, _T], _nullable(t.ltrim), _T, None, "strip from the start", strict=False)
_fn("RTRIM", (1, 2), [_T, _T], _nullable(t.rtrim), _T, None, "strip from the end", strict=False)
_fn("REVERSE", (1, 1), [_T], t.reverse, _T, None, "bytes in reverse order")
_fn("MD5", (1, 1), [_T], t.md5, _T, "md5", "MD5 digest as lower-case hex")
# checksums (§5.5)
_fn("CRC32", (1, 1), [_T], t.crc32c, _N, None, "CRC-32C; NULL hashes as empty input", strict=False)
_fn(
    "CRC64",
    (1, 1),
    [_T],
    t.crc64,
    _N,
    None,
    "CRC-64 (poly 0x95AC9329AC4BC9B5); NULL hashes as empty input",
    strict=False,
)
# date and time (§5.3), UTC
_fn(
    "UNIX_TIMESTAMP",
    (0, 0),
    [],
    x.unix_timestamp,
    _N,
    None,
    "current time in float seconds (EvalContext.now when set)",
    deterministic=False,
    context=True,
)
_fn(
    "TODAY_UTC",
    (0, 0),
    [],
    x.today_utc,
    _N,
    None,
    "midnight UTC today, float seconds",
    deterministic=False,
    context=True,
)
_fn("STRPTIME", (2, 2), [_T, _T], x.strptime, _N, None, "parse text with a strptime format (UTC)")
_fn("STRFTIME", (2, 2), [_T, _A], x.strftime, _T, None, "format a timestamp (UTC), %f and %03f")
_fn("YEAR", (1, 1), [_A], x.year, _N, None, "UTC year of a timestamp")
_fn("MONTH", (1, 1), [_A], x.month, _N, None, "UTC month (1-12) of a timestamp")
_fn("DAY", (1, 1), [_A], x.day, _N, None, "UTC day of month of a timestamp")
_fn("DATE_UTC", (1, 1), [_A], x.date_utc, _N, None, "midnight UTC of a timestamp's day")
# numeric (§5.4)
_fn("ABS", (1, 1), [_N], m.abs_, _N, "abs", "absolute value")
_fn("CEILING", (1, 1), [_N], m.ceiling, _N, None, "round up to an integer")
_fn("FLOOR", (1, 1), [_N], m.floor, _N, None, "round down to an integer")
_fn("ROUND", (1, 2), [_N, _N], m.round_, _N, None, "round half away from zero to places decimals")
_fn(
    "GREATEST",
    (1, -1),
    [_A],
    m.greatest,
    _N,
    None,
    "largest numeric argument (others skipped); NaN if none",
    strict=False,
)
_fn(
    "LEAST",
    (1, -1),
    [_A],
    m.least,
    _N,
    None,
    "smallest numeric argument (others skipped); NaN if none",
    strict=False,
)
_fn("POWER", (2, 2), [_N, _N], m.power, _N, "power", "b raised to e")
for _name in (
    "SQRT",
    "EXP",
    "LN",
    "LOG2",
    "LOG10",
    "SIN",
    "COS",
    "TAN",
    "COT",
    "ASIN",
    "ACOS",
    "ATAN",
    "SINH",
    "COSH",
    "TANH",
    "RADIANS",
    "DEGREES",
):
    _fn(
        _name,
        (1, 1),
        [_N],
        m.float_fn(_name),
        _N,
        None,
        f"{_name.lower()} (float; NaN outside domain)",
    )
_fn("ATAN2", (2, 2), [_N, _N], m.atan2, _N, "atan2", "arctangent of y/x using both signs")
_fn("SIGN", (1, 1), [_N], m.sign, _N, None, "-1, 0 or 1")
_fn(
    "WIDTH_BUCKET",
    (4, 4),
    [_N],
    m.width_bucket,
    _N,
    None,
    "bucket 1..n over [min, max); 0 below, n + 1 above",
)
_fn(
    "GEO_DISTANCE",
    (4, 4),
    [_N],
    m.geo_distance,
    _N,
    None,
    "haversine metres between two lat/lon points",
)
# arrays (§5.6)
_fn("ARRAY_COUNT", (1, 1), ["array"], x.array_count, _N, None, "number of elements")
_fn("ARRAY_SUM", (1, 1), ["array"], x.array_sum, _N, None, "sum of elements, NULLs skipped")
_fn(
    "ARRAY_MAX", (1, 1), ["array"], x.array_max, _A, None, "largest element by the comparison rules"
)
_fn(
    "ARRAY_MIN",
    (1, 1),
    ["array"],
    x.array_min,
    _A,
    None,
    "smallest element by the comparison rules",
)
_fn(
    "ARRAY_TO_STRING",
    (3, 3),
    ["array", _T, _T],
    x.array_to_string,
    _T,
    None,
    "elements joined by delim, NULLs as null_text",
    strict=False,
)
# NULL handling, conditionals, constructors (§5.8, §5.9)
_fn("COALESCE", (1, -1), [_A], x.coalesce, _A, None, "first non-NULL argument", strict=False)
_fn(
    "IF",
    (3, 3),
    ["condition", _A, _A],
    _if,
    _A,
    None,
    "a when cond is TRUE, else b; only the chosen branch is evaluated",
    lazy=True,
    strict=False,
)
_fn("TRUE_VALUE", (0, 0), [], lambda: True, _N, None, "TRUE (1); also the keyword TRUE")
_fn("FALSE_VALUE", (0, 0), [], lambda: False, _N, None, "FALSE (0); also the keyword FALSE")
_fn("NAN_VALUE", (0, 0), [], lambda: float("nan"), _N, None, "the NaN value")
_fn("CHAR_VALUE", (1, 1), [_N], x.char_value, _T, None, "the single byte n (0-255)")
# context (§5.10): NULL unless the EvalContext carries the value
for _name, _field, _doc in (
    ("SOW_KEY", "sow_key", "the record's SOW key"),
    ("SOW_KEY_HASH", "sow_key_hash", "hash of the SOW key (the key itself by default)"),
    ("TOPIC_NAME", "topic", "the topic name"),
    ("MESSAGE_SIZE", "message_size", "payload size in bytes"),
    ("CORRELATION_ID", "correlation_id", "publisher-supplied correlation id"),
    ("LAST_UPDATED", "timestamp", "when the record was last written, float seconds"),
    ("BOOKMARK", "bookmark", "the message bookmark (its sequence number by default)"),
):
    _fn(_name, (0, 0), [], x.context_fn(_field), _A, None, _doc, context=True)

#: Every function by upper-case name.
FUNCTIONS: dict[str, FunctionSpec] = {f.name: f for f in _F}


def call_function(spec: FunctionSpec, args: Sequence[Any], ctx: EvalContext | None) -> Any:
    """Call a non-lazy function on evaluated argument values (the reference path).

    Converts each argument by its kind, applies ``strict`` NULL propagation
    and turns an empty-string result into NULL (spec §2.3); a value the
    function cannot compute with is NULL too (see :func:`apply_impl`).
    """
    if spec.context:
        result = spec.impl(ctx)
    else:
        conv = [CONVERTERS[spec.kind_of(i)](a) for i, a in enumerate(args)]
        if spec.strict and any(c is None for c in conv):
            return None
        result = apply_impl(spec.impl, conv)
    return None if result == "" and type(result) is str else result


def apply_impl(impl: Callable[..., Any], args: Sequence[Any]) -> Any:
    """``impl(*args)``, or NULL (None) when the arguments are outside what it can compute.

    Values come from messages: an integer too large for a float, an infinity
    given to a trigonometric function, a count past Python's limits. Such an
    ``ArithmeticError`` or ``ValueError`` makes the function's result NULL for
    this evaluation; a :class:`~sowlib.errors.SowError` (a regex time limit)
    propagates.
    """
    try:
        return impl(*args)
    except SowError:
        raise
    except (ArithmeticError, ValueError):
        return None


def markdown_table() -> str:
    """The function table of docs/filters.md, generated from the registry."""
    rows = [
        "| Function | Returns | Deterministic | Spark | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in _F:
        det = "yes" if f.deterministic else "no"
        spark = f"`{f.spark}`" if f.spark else "-"
        rows.append(f"| `{f.signature()}` | {f.returns} | {det} | {spark} | {f.doc} |")
    return "\n".join(rows) + "\n"
