"""Dynamically typed filter values as Spark Columns: the spec's §2 rules in S form.

A :class:`Val` carries a per-row type tag plus a long, a double and a string
view, so comparison, arithmetic and truth follow ``sowlib.expr.runtime``
exactly. Imports ``sowlib.spark.sqltext`` only (SQL text, no JVM calls).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from sowlib.spark import sqltext as F
from sowlib.spark.sqltext import S

__all__ = [
    "NULL",
    "Val",
    "arith",
    "choose",
    "compare",
    "float_val",
    "int_val",
    "logic_to_val",
    "null_val",
    "pack",
    "str_val",
    "text_of",
    "to_num",
    "truth",
    "unpack",
    "unsupported",
    "variant_base",
    "base_of",
    "let",
]

NULL, INT, FLOAT, STR, BAD = "null", "int", "float", "str", "bad"
_ORDER = (NULL, INT, FLOAT, STR, BAD)
_I64_MAX = 2**63 - 1
_U64_MAX = 2**64 - 1
# The numeric spellings of spec §2.2, as runtime.parse_number reads them.
_INT_RX = r"^[+-]?[0-9]+\z"
_NUM_RX = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\z"
_INT_TYPES = ("BIGINT", "INT", "SMALLINT", "TINYINT", "BOOLEAN")


def let(value: S, body: Callable[[S], S]) -> S:
    """``body(x)`` with ``x`` bound to ``value``, computed once.

    The S API has no sharing: a sub-expression used n times is copied n
    times, and nested copies outgrow code generation. A one-element
    ``transform`` binds it to a lambda variable instead.
    """
    return F.element_at(F.transform(F.array(value), body), 1)


def unsupported(what: str) -> S:
    """A S that fails the query when evaluated: the row holds a value Spark cannot mirror."""
    return F.raise_error(F.lit(f"UnsupportedFilterError: {what} (spark back-end)"))


@attrs.frozen
class Val:
    """One filter value per row: ``tag`` is one of ``kinds``; ``i``/``f``/``s`` are its views.

    For tag ``int``, ``i`` is the value and ``f`` its double; for ``float`` only
    ``f`` is meaningful; for ``str`` only ``s``; ``bad`` (a string that does not
    convert, seen through :func:`to_num`) has no view.
    """

    kinds: frozenset[str]
    tag: S
    i: S
    f: S
    s: S
    #: precomputed numeric view (tag with ``bad``, long, double) for bound fields
    numeric: tuple[S, S, S] | None = None


_SLOTS = ("tag", "i", "f", "s", "ntag", "ni", "nf")


def pack(base: S, kinds: frozenset[str]) -> S:
    """A ``struct(tag, i, f, s)`` plus its numeric view, computed once per row."""

    def body(x: S) -> S:
        g = x.getField
        n = to_num(Val(kinds, g("tag"), g("i"), g("f"), g("s")), bad_as_nan=False)
        cols = (g("tag"), g("i"), g("f"), g("s"), n.tag, n.i.cast("long"), n.f.cast("double"))
        return F.struct(*[c.alias(name) for c, name in zip(cols, _SLOTS, strict=True)])

    return let(base, body)


def unpack(packed: S, kinds: frozenset[str]) -> Val:
    """The :class:`Val` stored by :func:`pack` (``packed`` is usually a lambda variable)."""
    g = packed.getField
    return Val(kinds, g("tag"), g("i"), g("f"), g("s"), (g("ntag"), g("ni"), g("nf")))


def _none() -> S:
    return F.lit(None)


def null_val() -> Val:
    """The NULL value."""
    return Val(frozenset({NULL}), F.lit(NULL), _none(), _none(), _none())


def int_val(c: S, nullable: bool = True) -> Val:
    """An integer (long) column; SQL NULL is sowlib NULL."""
    c = c.cast("long")
    if not nullable:
        return Val(frozenset({INT}), F.lit(INT), c, c.cast("double"), _none())
    tag = F.when(c.isNull(), F.lit(NULL)).otherwise(F.lit(INT))
    return Val(frozenset({NULL, INT}), tag, c, c.cast("double"), _none())


def float_val(c: S, nullable: bool = True) -> Val:
    """A double column; SQL NULL is sowlib NULL."""
    c = c.cast("double")
    if not nullable:
        return Val(frozenset({FLOAT}), F.lit(FLOAT), _none(), c, _none())
    tag = F.when(c.isNull(), F.lit(NULL)).otherwise(F.lit(FLOAT))
    return Val(frozenset({NULL, FLOAT}), tag, _none(), c, _none())


def str_val(c: S) -> Val:
    """A string column; SQL NULL and ``''`` are sowlib NULL (spec §2.3)."""
    tag = F.when(c.isNull() | (c == F.lit("")), F.lit(NULL)).otherwise(F.lit(STR))
    return Val(frozenset({NULL, STR}), tag, _none(), _none(), c)


def variant_base(v: S) -> S:
    """The ``struct(tag, i, f, s)`` of a VARIANT whose type is known only per row (JSON).

    Objects, non-empty arrays and integers above 2**63-1 make the query fail:
    Spark cannot mirror how sowlib treats them, and it never approximates.
    """

    def typed(x: S) -> S:
        t = F.schema_of_variant(x)
        s = F.try_variant_get(x, "$", "string")
        as_long = F.try_variant_get(x, "$", "bigint")
        tag = (
            F.when(x.isNull() | (t == F.lit("VOID")), F.lit(NULL))
            .when(t.isin(*_INT_TYPES), F.lit(INT))
            .when(t.isin("DOUBLE", "FLOAT"), F.lit(FLOAT))
            # JSON ``5.0`` arrives as DECIMAL(1,0): a decimal within the long range is a
            # float in sowlib; a wider integer is an unsigned or big int it keeps exact.
            .when(
                t.startswith("DECIMAL(") & (~t.endswith(",0)") | as_long.isNotNull()),
                F.lit(FLOAT),
            )
            .when(t == F.lit("STRING"), F.when(s == F.lit(""), F.lit(NULL)).otherwise(F.lit(STR)))
            .when(
                (t == F.lit("ARRAY<VOID>"))
                & (F.size(F.try_variant_get(x, "$", "array<variant>")) == F.lit(0)),
                F.lit(NULL),
            )
            .otherwise(unsupported("an array, object or 64-bit unsigned value in a filtered field"))
        )
        f = F.try_variant_get(x, "$", "double")
        return F.struct(tag.alias("tag"), as_long.alias("i"), f.alias("f"), s.alias("s"))

    return let(v, typed)


def base_of(v: Val) -> S:
    """``struct(tag, i, f, s)`` of a statically typed value."""
    cols = (v.tag, v.i.cast("long"), v.f.cast("double"), v.s.cast("string"))
    return F.struct(*[c.alias(n) for c, n in zip(cols, _SLOTS[:4], strict=True)])


def switch(v: Val, branches: Mapping[str, S], default: S | None = None) -> S:
    """``CASE v.tag`` over the kinds ``v`` can have; kinds without a branch get ``default``."""
    kinds = [k for k in _ORDER if k in v.kinds]
    cols = [branches.get(k, default if default is not None else _none()) for k in kinds]
    if len(kinds) == 1:
        return cols[0]
    out = F.when(v.tag == F.lit(kinds[0]), cols[0])
    for k, c in zip(kinds[1:-1], cols[1:-1], strict=True):
        out = out.when(v.tag == F.lit(k), c)
    return out.otherwise(cols[-1])


def _str_number(s: S) -> Val:
    """The numeric view of a non-empty string (runtime.parse_number); ``bad`` when it fails."""
    as_long = s.try_cast("long")
    big = s.try_cast("decimal(38,0)")
    int_tag = (
        F.when(as_long.isNotNull(), F.lit(INT))
        .when(big.isNull() | (big > F.lit(str(_U64_MAX)).cast("decimal(20,0)")), F.lit(FLOAT))
        .otherwise(unsupported("an integer string above 2**63-1"))
    )
    tag = (
        F.when(s.rlike(_INT_RX), int_tag).when(s.rlike(_NUM_RX), F.lit(FLOAT)).otherwise(F.lit(BAD))
    )
    f = F.when(tag == F.lit(BAD), _none()).otherwise(s.try_cast("double"))
    return Val(frozenset({INT, FLOAT, BAD}), tag, as_long, f, _none())


def to_num(v: Val, bad_as_nan: bool) -> Val:
    """The numeric view (kinds within null/int/float, plus ``bad`` unless ``bad_as_nan``)."""
    if STR not in v.kinds:
        return v
    nan = F.lit(float("nan"))
    kinds = (v.kinds - {STR}) | {INT, FLOAT} | (set() if bad_as_nan else {BAD})
    if v.numeric is not None:
        ntag, ni, nf = v.numeric
        if bad_as_nan:
            bad = ntag == F.lit(BAD)
            ntag, nf = F.when(bad, F.lit(FLOAT)).otherwise(ntag), F.when(bad, nan).otherwise(nf)
        return Val(frozenset(kinds), ntag, ni, nf, _none())
    conv = _str_number(v.s)
    conv_tag = conv.tag
    if bad_as_nan:
        conv_tag = F.when(conv.tag == F.lit(BAD), F.lit(FLOAT)).otherwise(conv.tag)
    conv_f = F.when(conv.tag == F.lit(BAD), nan if bad_as_nan else _none()).otherwise(conv.f)
    tag = switch(v, {STR: conv_tag}, default=v.tag)
    i = switch(v, {INT: v.i, STR: conv.i})
    f = switch(v, {INT: v.f, FLOAT: v.f, STR: conv_f})
    return Val(frozenset(kinds), tag, i, f, _none())


_OPS: dict[str, Callable[[S, S], S]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _ieee(op: str, a: S, b: S) -> S:
    # Spark orders NaN above everything and NaN = NaN; IEEE (runtime) does not.
    return F.when(F.isnan(a) | F.isnan(b), F.lit(op == "!=")).otherwise(_OPS[op](a, b))


def _num_compare(op: str, a: Val, b: Val) -> S:
    """Compare two numeric views (kinds within int/float/bad; at most one side bad)."""
    a_greater = F.lit(op in (">", ">=", "!="))
    b_greater = F.lit(op in ("<", "<=", "!="))
    ne = F.lit(op == "!=")

    def against(x: Val, left_int: S, left_f: S) -> dict[str, S]:
        return {
            INT: left_int,
            FLOAT: _ieee(op, left_f, x.f),
            # a non-converting string is greater than any number except NaN (runtime)
            BAD: F.when(F.isnan(left_f), ne).otherwise(b_greater),
        }

    return switch(
        a,
        {
            INT: switch(b, against(b, _OPS[op](a.i, b.i), a.f)),
            FLOAT: switch(b, against(b, _ieee(op, a.f, b.f), a.f)),
            BAD: switch(b, {INT: a_greater, FLOAT: F.when(F.isnan(b.f), ne).otherwise(a_greater)}),
        },
    )


def compare(op: str, a: Val, b: Val) -> S:
    """``a op b`` by spec §2.4 as a definite boolean (a NULL side gives FALSE)."""
    false = F.lit(False)
    if a.kinds == {NULL} or b.kinds == {NULL}:
        return false

    def against(ak: str) -> S:
        ax = _only(a, ak)
        branches: dict[str, S] = {NULL: false}
        for bk in (INT, FLOAT, STR):
            if bk in b.kinds:
                bx = _only(b, bk)
                if ak == STR and bk == STR:
                    branches[bk] = _OPS[op](ax.s, bx.s)
                else:
                    branches[bk] = _num_compare(op, to_num(ax, False), to_num(bx, False))
        return switch(b, branches)

    branches = {k: against(k) for k in (INT, FLOAT, STR) if k in a.kinds}
    return switch(a, {NULL: false, **branches})


def _only(v: Val, kind: str) -> Val:
    """``v`` seen in a branch where its tag is known to be ``kind``."""
    return Val(frozenset({kind}), F.lit(kind), v.i, v.f, v.s, v.numeric)


def arith(op: str, a: Val, b: Val) -> Val:
    """``a op b`` for ``+ - * / %`` by spec §2.6 (C division and remainder)."""
    if a.kinds == {NULL} or b.kinds == {NULL}:
        return null_val()
    x, y = to_num(a, bad_as_nan=True), to_num(b, bad_as_nan=True)
    both_int = (x.tag == F.lit(INT)) & (y.tag == F.lit(INT))
    any_null = (x.tag == F.lit(NULL)) | (y.tag == F.lit(NULL))
    int_zero_div = both_int & (y.i == F.lit(0)) if op in ("/", "%") else F.lit(False)
    if op == "+":
        i, f = x.i + y.i, x.f + y.f
    elif op == "-":
        i, f = x.i - y.i, x.f - y.f
    elif op == "*":
        i, f = x.i * y.i, x.f * y.f
    elif op == "/":
        i = F.when(y.i == F.lit(0), _none()).otherwise(_int_div(x.i, y.i))
        f = F.when(y.f == F.lit(0.0), _div_zero(x.f, y.f)).otherwise(x.f / y.f)
    else:
        i = F.when(y.i == F.lit(0), _none()).otherwise(x.i % y.i)
        f = F.when(
            (y.f == F.lit(0.0)) | _is_inf(x.f),
            F.lit(float("nan")),
        ).otherwise(x.f % y.f)
    int_only = INT in x.kinds and INT in y.kinds
    float_possible = FLOAT in x.kinds or FLOAT in y.kinds
    kinds = {k for k, on in ((INT, int_only), (FLOAT, float_possible)) if on}
    if NULL in x.kinds or NULL in y.kinds or op in ("/", "%"):
        kinds.add(NULL)
    tag = (
        F.when(any_null | int_zero_div, F.lit(NULL))
        .when(both_int, F.lit(INT))
        .otherwise(F.lit(FLOAT))
    )
    f_final = F.when(both_int, i.cast("double")).otherwise(f)
    return Val(frozenset(kinds), tag, i, f_final, _none())


def _int_div(a: S, b: S) -> S:
    # C division truncates toward zero; ``a - a % b`` is an exact multiple of b
    # (Java's % keeps the sign of the left operand), so the decimal quotient is exact.
    exact = (a - a % b).cast("decimal(20,0)") / b.cast("decimal(20,0)")
    return exact.cast("long")


def _is_inf(c: S) -> S:
    return (c == F.lit(float("inf"))) | (c == F.lit(float("-inf")))


def _div_zero(a: S, b: S) -> S:
    """IEEE ``a / ±0.0``: NaN for 0 or NaN, else an infinity signed by both signs."""
    neg_zero = F.atan2(b, F.lit(-1.0)) < F.lit(0.0)
    positive = (a > F.lit(0.0)) != neg_zero
    inf = F.when(positive, F.lit(float("inf"))).otherwise(F.lit(float("-inf")))
    return F.when((a == F.lit(0.0)) | F.isnan(a), F.lit(float("nan"))).otherwise(inf)


def negate(v: Val) -> Val:
    """Unary minus; NULL stays NULL, strings convert (non-numeric -> NaN)."""
    x = to_num(v, bad_as_nan=True)
    return Val(x.kinds, x.tag, -x.i, -x.f, _none())


def truth(v: Val) -> S:
    """A value used as a condition (runtime.to_logic): NULL, NaN and non-numeric text -> NULL."""
    x = to_num(v, bad_as_nan=True)
    f_truth = F.when(F.isnan(x.f), _none()).otherwise(x.f != F.lit(0.0))
    return switch(x, {NULL: _none(), INT: x.i != F.lit(0), FLOAT: f_truth})


def logic_to_val(b: S) -> Val:
    """A boolean (NULL = sowlib NULL) as a value: TRUE is 1, FALSE is 0."""
    return int_val(b.cast("long"))


def text_of(v: Val) -> S:
    """The text LIKE and BEGINS/ENDS WITH see (runtime.text_of); NULL for NULL.

    Floats render like ``canonical_text`` only when integral; other floats make
    the query fail (Java and Python print them differently).
    """
    integral = (F.floor(v.f) == v.f) & (F.abs(v.f) < F.lit(float(2**63)))
    f_text = F.when(integral, v.f.cast("long").cast("string")).otherwise(
        unsupported("the text of a non-integral float")
    )
    return switch(v, {NULL: _none(), STR: v.s, INT: v.i.cast("string"), FLOAT: f_text})


def choose(cond: S, a: Val, b: Val) -> Val:
    """``a`` where ``cond`` is TRUE, otherwise ``b`` (IF and COALESCE)."""

    def pick(x: S, y: S) -> S:
        return F.when(cond, x).otherwise(y)

    return Val(
        a.kinds | b.kinds, pick(a.tag, b.tag), pick(a.i, b.i), pick(a.f, b.f), pick(a.s, b.s)
    )
