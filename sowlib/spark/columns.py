"""AMPS filters as Spark Columns: the AST of ``sowlib.expr.nodes`` compiled to S expressions.

Reproduces ``sowlib.expr.runtime`` exactly or raises ``UnsupportedFilterError``
(never approximates); values that only show up at run time and cannot be
mirrored fail the query. Imports pyspark, ``sowlib.expr`` and ``sowlib.spark`` helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import assert_never

import attrs
from pyspark.sql import Column
from pyspark.sql import types as T

from sowlib.errors import UnsupportedFilterError
from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.nodes import (
    And,
    Arith,
    BeginsWith,
    Between,
    Call,
    Compare,
    EndsWith,
    Field,
    InList,
    IsNaN,
    IsNull,
    Like,
    Literal,
    Neg,
    Node,
    Not,
    Or,
    arith_chain,
    chain,
    walk,
)
from sowlib.expr.parser import parse
from sowlib.paths import FieldPath, Step
from sowlib.spark import sqltext as F
from sowlib.spark import values as V
from sowlib.spark.likeregex import to_java_regex
from sowlib.spark.sqltext import S

__all__ = ["MAX_EXPRESSION_CHARS", "REJECTED_CONSTRUCTS", "to_column"]

#: Constructs the Spark back-end rejects at compile time (documented in docs/spark.md).
REJECTED_CONSTRUCTS = frozenset(
    {
        "function",  # any function outside the exact set below
        "LIKE pattern",  # syntax outside the exact PCRE/Java subset
        "integer literal above 2**63-1",
        "field type",  # array/map/struct/date leaves with a static schema
        "field name",  # names a variant path cannot spell
        "filter size",  # an expression longer than MAX_EXPRESSION_CHARS
    }
)

#: Longest Spark SQL expression ``to_column`` hands to Spark. Spark parses it as text;
#: its parser's memory grows much faster than the text (a 1 GB driver ran out parsing
#: an AND chain of 200 comparisons, about 150,000 characters; 100 comparisons parsed).
MAX_EXPRESSION_CHARS = 100_000

#: Functions compiled exactly (by registry name).
EXACT_FUNCTIONS = frozenset(
    {
        "TRUE_VALUE",
        "FALSE_VALUE",
        "NAN_VALUE",
        "LENGTH",
        "INSTR",
        "MD5",
        "ABS",
        "UPPER",
        "LOWER",
        "CONCAT",
        "COALESCE",
        "IF",
    }
)

_LOWER = "abcdefghijklmnopqrstuvwxyz"
_INT_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType)


def to_column(
    filter: str | Node,
    *,
    json_column: str | None = None,
    struct_column: str | None = None,
    schema: T.StructType | str | None = None,
) -> Column:
    """Compile an AMPS filter into a boolean Spark S (TRUE exactly where sowlib matches).

    Paths map to top-level columns by default (``/price`` -> ``price``,
    ``/a/b`` -> field ``b`` of struct ``a``); with ``json_column`` they are read
    from JSON text in that column (parsed as VARIANT: per-row types, the
    faithful mode); with ``struct_column`` from fields of that struct column.
    ``schema`` (a StructType or DDL string, e.g. ``df.schema``) gives static
    types to column and struct modes; without it their types are read per row.

    Args:
        filter: filter text or a parsed :data:`~sowlib.expr.nodes.Node`.
        json_column: name of a string column holding JSON documents.
        struct_column: name of a struct column holding the documents.
        schema: the type of the top-level columns (or of ``struct_column``).
    Returns:
        A non-NULL boolean S.
    Raises:
        FilterSyntaxError: the text is not a filter.
        UnsupportedFilterError: a construct Spark cannot evaluate exactly
            (``construct`` names it; see :data:`REJECTED_CONSTRUCTS`).

    Example:
        >>> df.where(to_column("/price > 100 AND /region IN ('EU', 'US')"))  # doctest: +SKIP
    """
    text = filter if isinstance(filter, str) else ""
    node = parse(filter) if isinstance(filter, str) else filter
    if json_column is not None and struct_column is not None:
        raise ValueError("pass json_column or struct_column, not both")
    struct_type = T._parse_datatype_string(schema) if isinstance(schema, str) else schema
    if struct_type is not None and not isinstance(struct_type, T.StructType):
        raise ValueError(f"schema {schema!r} is not a struct type")
    compiler = _Compiler(text, json_column, struct_column, struct_type)
    paths = sorted({n.path.to_text(): n for n in walk(node) if isinstance(n, Field)}.items())
    if not paths:
        return compiler.finish(node, F.coalesce(compiler.logic(node), F.lit(False)))
    # Each field is computed once into a struct bound to a lambda variable: the
    # S API has no sharing, and repeated field trees outgrow code generation.
    packed = []
    for slot, (path, field) in enumerate(paths):
        base, kinds = compiler.field(field, field.path)
        compiler.slots[path] = (f"f{slot}", kinds)
        packed.append(V.pack(base, kinds).alias(f"f{slot}"))

    def body(row: S) -> S:
        compiler.row = row
        return F.coalesce(compiler.logic(node), F.lit(False))

    return compiler.finish(node, F.element_at(F.transform(F.array(F.struct(*packed)), body), 1))


@attrs.define
class _Compiler:
    text: str
    json_column: str | None
    struct_column: str | None
    schema: T.StructType | None
    _json_root: S | None = None
    slots: dict[str, tuple[str, frozenset[str]]] = attrs.Factory(dict)
    row: S | None = None

    def fail(self, construct: str, node: Node, hint: str = "") -> UnsupportedFilterError:
        return UnsupportedFilterError(construct, "spark", self.text, node.start, hint)

    def finish(self, node: Node, expr: S) -> Column:
        """The Column of ``expr``, or ``UnsupportedFilterError`` when Spark cannot parse it."""
        size = len(expr.sql)
        if size > MAX_EXPRESSION_CHARS:
            hint = (
                f"its Spark expression has {size:,} characters, more than Spark's parser "
                f"takes ({MAX_EXPRESSION_CHARS:,}); filter with sowlib instead (the sow "
                "data source's filter option)"
            )
            raise self.fail("filter size", node, hint)
        return F.to_spark(expr)

    # ---------------------------------------------------------------- logic
    def logic(self, node: Node) -> S:
        """A boolean S where SQL NULL is sowlib's NULL truth value."""
        match node:
            case And() | Or():
                return self._chain(node)
            case Not(operand):
                return ~self.logic(operand)
            case Compare(op, left, right):
                return V.compare(op, self.value(left), self.value(right))
            case Between(value, low, high, negated):
                v = self.value(value)
                inside = V.compare(">=", v, self.value(low)) & V.compare("<=", v, self.value(high))
                return self._negatable(v, inside, negated)
            case InList(value, items, negated):
                v = self.value(value)
                found = _any([V.compare("=", v, self.value(item)) for item in items])
                return self._negatable(v, found, negated)
            case Like(value, pattern, raw, negated):
                return self._like(node, self.value(value), pattern, raw, negated)
            case BeginsWith(value, items, negated) | EndsWith(value, items, negated):
                v = self.value(value)
                s = V.text_of(v)
                tests = []
                for item in items:
                    t = V.text_of(self.value(item))
                    hit = s.startswith(t) if isinstance(node, BeginsWith) else s.endswith(t)
                    tests.append(F.coalesce(hit, F.lit(False)))
                return self._negatable(v, _any(tests), negated)
            case IsNull(value, negated):
                is_null = self.value(value).tag == F.lit(V.NULL)
                return ~is_null if negated else is_null
            case IsNaN(value, negated):
                v = self.value(value)
                nan = V.switch(v, {V.FLOAT: F.isnan(v.f)}, default=F.lit(False))
                return ~nan if negated else nan
            case Literal() | Field() | Neg() | Arith() | Call():
                return V.truth(self.value(node))
            case _:
                assert_never(node)

    def _chain(self, node: And | Or) -> S:
        """A whole ``a AND b AND ...`` (or OR) chain, read with :func:`chain` (no recursion).

        By the spec §2.5 tables the first operand that is not TRUE (for OR: not FALSE)
        decides, left to right, else the last one does. Each operand becomes a code
        (FALSE 0, TRUE 1, NULL 2); one that does not decide becomes SQL NULL, so a flat
        ``coalesce`` picks the deciding code and evaluates no operand after it. Every
        operand's text appears once and Spark's tree gains one level, whatever the
        length (nesting the two-operand form copies the left side at every clause).
        """
        parts = chain(node)
        # code -> the chain's code, for an operand that is not last (None: go on)
        table = F.array(0, None, 2) if isinstance(node, And) else F.array(None, 1, 2)
        codes = [_code(self.logic(part)) for part in parts]
        picks = [F.element_at(table, code + F.lit(1)) for code in codes[:-1]]
        decided = _balanced(F.coalesce, [*picks, codes[-1]])
        return F.element_at(F.array(False, True, None), decided + F.lit(1))

    def _negatable(self, v: V.Val, found: S, negated: bool) -> S:
        # Predicates never return NULL; a NULL value makes both forms FALSE.
        if not negated:
            return found
        return (v.tag != F.lit(V.NULL)) & ~found

    def _like(self, node: Node, v: V.Val, pattern: str, raw: bool, negated: bool) -> S:
        s = V.text_of(v)
        if not pattern:
            hit = F.lit(False)
        elif raw:
            hit = F.coalesce(s.contains(F.lit(pattern)), F.lit(False))
        else:
            try:
                java = to_java_regex(pattern)
            except UnsupportedFilterError as exc:
                raise self.fail("LIKE pattern", node, exc.construct) from None
            hit = F.coalesce(_byte_chars(s).rlike(java), F.lit(False))
        return self._negatable(v, hit, negated)

    # ---------------------------------------------------------------- values
    def value(self, node: Node) -> V.Val:
        """The dynamically typed value of ``node``."""
        match node:
            case Literal(value):
                return self._literal(node, value)
            case Field(path):
                if self.row is None:
                    base, kinds = self.field(node, path)
                    return V.unpack(V.pack(base, kinds), kinds)
                slot, kinds = self.slots[path.to_text()]
                return V.unpack(self.row.getField(slot), kinds)
            case Neg(operand):
                return V.negate(self.value(operand))
            case Arith():
                return self._arith(node)
            case Call():
                return self._call(node)
            case (
                Compare()
                | Between()
                | InList()
                | Like()
                | BeginsWith()
                | EndsWith()
                | IsNull()
                | IsNaN()
                | Not()
                | And()
                | Or()
            ):
                return V.logic_to_val(self.logic(node))
            case _:
                assert_never(node)

    def _arith(self, node: Arith) -> V.Val:
        """A whole ``a op b op ...`` chain, read with :func:`arith_chain` (no recursion).

        One operator compiles inline. Longer chains fold left to right (the operators
        do not associate) in one Spark ``aggregate`` over the operands' numeric views:
        the accumulator is a lambda variable, so each step's text appears once and
        Spark's tree does not deepen with the length (inline, each step copies the
        one before it several times).
        """
        first, steps = arith_chain(node)
        if len(steps) == 1:
            op, right = steps[0]
            return V.arith(op, self.value(first), self.value(right))
        vals = [self.value(first), *(self.value(right) for _, right in steps)]
        if any(v.kinds == {V.NULL} for v in vals):
            return V.null_val()  # a NULL operand makes every step after it NULL
        nums = [V.to_num(v, bad_as_nan=True) for v in vals]
        ops = sorted({op for op, _ in steps})
        items = [
            F.struct(F.lit(ops.index(op)).alias("o"), *_numeric(x))
            for (op, _), x in zip(steps, nums[1:], strict=True)
        ]
        kinds = frozenset({V.NULL, V.INT, V.FLOAT})
        none = F.lit(None)

        def merge(acc: S, item: S) -> S:
            a = V.Val(kinds, acc.getField("tag"), acc.getField("i"), acc.getField("f"), none)
            b = V.Val(kinds, item.getField("tag"), item.getField("i"), item.getField("f"), none)
            out = [F.struct(*_numeric(V.arith(op, a, b))) for op in ops]
            if len(out) == 1:
                return out[0]
            picked = F.when(item.getField("o") == F.lit(0), out[0])
            for n, o in enumerate(out[1:-1], start=1):
                picked = picked.when(item.getField("o") == F.lit(n), o)
            return picked.otherwise(out[-1])

        total = F.aggregate(F.array(*items), F.struct(*_numeric(nums[0])), merge)
        get = total.getField
        return V.Val(kinds, get("tag"), get("i"), get("f"), none)

    def _literal(self, node: Node, value: int | float | str | None) -> V.Val:
        if value is None or value == "":
            return V.null_val()
        if isinstance(value, bool):
            return V.int_val(F.lit(int(value)), nullable=False)
        if isinstance(value, int):
            if not -(2**63) <= value < 2**63:
                raise self.fail("integer literal above 2**63-1", node)
            return V.int_val(F.lit(value), nullable=False)
        if isinstance(value, float):
            return V.float_val(F.lit(value), nullable=False)
        s = F.lit(value)
        return attrs.evolve(V.str_val(s), kinds=frozenset({V.STR}), tag=F.lit(V.STR))

    def field(self, node: Node, path: FieldPath) -> tuple[S, frozenset[str]]:
        """The value at ``path`` computed from the row (before binding)."""
        steps = path.steps
        if self.json_column is not None:
            if self._json_root is None:
                self._json_root = F.try_parse_json(F.col(_quote(self.json_column)))
            return self._variant(self._variant_path(node, self._json_root, path))
        if self.struct_column is not None:
            base = F.col(_quote(self.struct_column))
            if self.schema is None:
                return self._variant(self._variant_path(node, F.to_variant_object(base), path))
            return self._static(self._typed(node, base, self.schema, path, 0))
        if self.schema is not None:
            return self._static(self._typed(node, None, self.schema, path, 0))
        top = F.col(_quote(steps[0].name))
        if len(steps) == 1 and steps[0].index is None:
            return self._variant(top.cast("variant"))
        rest = FieldPath((attrs.evolve(steps[0], name="_"), *steps[1:]))
        root = F.to_variant_object(F.struct(top.alias("_")))
        return self._variant(self._variant_path(node, root, rest))

    @staticmethod
    def _variant(v: S) -> tuple[S, frozenset[str]]:
        return V.variant_base(v), frozenset({V.NULL, V.INT, V.FLOAT, V.STR})

    @staticmethod
    def _static(v: V.Val) -> tuple[S, frozenset[str]]:
        return V.base_of(v), v.kinds

    def _variant_path(self, node: Node, root: S, path: FieldPath) -> S:
        cur = root
        for n, step in enumerate(path.steps):
            if "'" in step.name or "\\" in step.name:
                raise self.fail("field name", node, f"{step.name!r} in a variant path")
            cur = V.let(cur, _stepper(first=n == 0, step=step))
        return cur

    def _typed(
        self, node: Node, base: S | None, schema: T.StructType, path: FieldPath, at: int
    ) -> V.Val:
        step = path.steps[at]
        matches = [f for f in schema.fields if f.name == step.name]
        if not matches:
            return V.null_val()  # an identifier that resolves to nothing is NULL (spec §1.4)
        dt = matches[0].dataType
        c = F.col(_quote(step.name)) if base is None else base.getField(step.name)
        if step.index is not None:
            if not isinstance(dt, T.ArrayType):
                if step.index != 0:
                    return V.null_val()
            else:
                c, dt = F.try_element_at(c, F.lit(step.index + 1)), dt.elementType
        if at + 1 < len(path.steps):
            if isinstance(dt, T.StructType):
                return self._typed(node, c, dt, path, at + 1)
            if isinstance(dt, T.ArrayType | T.MapType):
                raise self.fail("field type", node, f"{path.to_text()} crosses {dt.simpleString()}")
            return V.null_val()  # a path through a scalar is NULL
        if isinstance(dt, _INT_TYPES):
            return V.int_val(c)
        if isinstance(dt, T.FloatType | T.DoubleType):
            return V.float_val(c)
        if isinstance(dt, T.DecimalType) and dt.scale > 0:
            return V.float_val(c)
        if isinstance(dt, T.DecimalType) and dt.precision <= 18:
            return V.int_val(c)
        if isinstance(dt, T.StringType):
            return V.str_val(c)
        if isinstance(dt, T.NullType):
            return V.null_val()
        raise self.fail("field type", node, f"{path.to_text()} is {dt.simpleString()}")

    # ---------------------------------------------------------------- functions
    def _call(self, node: Call) -> V.Val:
        name, args = node.name, node.args
        spec = FUNCTIONS.get(name)
        if name not in EXACT_FUNCTIONS or spec is None:
            spark = spec.spark if spec is not None else None
            hint = f"Spark's {spark} differs in edge cases" if spark else "no exact Spark form"
            raise self.fail("function", node, f"{name}() - {hint}")
        if name == "TRUE_VALUE":
            return V.int_val(F.lit(1), nullable=False)
        if name == "FALSE_VALUE":
            return V.int_val(F.lit(0), nullable=False)
        if name == "NAN_VALUE":
            return V.float_val(F.lit(float("nan")), nullable=False)
        if name == "IF":
            cond = F.coalesce(V.truth(self.value(args[0])), F.lit(False))
            return V.choose(cond, self.value(args[1]), self.value(args[2]))
        if name == "COALESCE":
            vals = [self.value(a) for a in args]
            return reduce(
                lambda acc, v: V.choose(acc.tag != F.lit(V.NULL), acc, v), vals[1:], vals[0]
            )
        if name == "ABS":
            x = V.to_num(self.value(args[0]), bad_as_nan=True)
            return V.Val(x.kinds, x.tag, F.abs(x.i), F.abs(x.f), F.lit(None))
        texts = [V.text_of(self.value(a)) for a in args]
        if name == "CONCAT":
            joined = F.concat_ws("", *texts)
            return V.str_val(joined)
        s = texts[0]
        if name == "LENGTH":
            return V.int_val(F.octet_length(s))
        if name == "INSTR":
            # byte positions: search the byte-per-char forms of both strings
            pos = F.instr(_byte_chars(s), _byte_chars(texts[1]))
            nulls = s.isNull() | texts[1].isNull()
            return V.int_val(F.when(nulls, F.lit(None)).otherwise(pos))
        if name == "MD5":
            return V.str_val(F.md5(s))
        upper = name == "UPPER"
        src, dst = (_LOWER, _LOWER.upper()) if upper else (_LOWER.upper(), _LOWER)
        return V.str_val(F.translate(s, src, dst))


def _stepper(*, first: bool, step: Step) -> Callable[[S], S]:
    # pyspark's transform() inspects the lambda's signature: a plain closure, not a partial
    def run(cur: S) -> S:
        return _step(cur, first, step)

    return run


def _step(cur: S, first: bool, step: Step) -> S:
    """One path step over a bound variant (a name, then an optional index)."""
    got = F.variant_get(cur, f"$['{step.name}']", "variant")
    if not first:  # the root is the document itself
        crosses = F.schema_of_variant(cur).startswith("ARRAY<")
        got = F.when(crosses, V.unsupported("a path that crosses an array")).otherwise(got)
    if step.index is None:
        return got

    def index(x: S) -> S:
        item = F.variant_get(x, f"$[{step.index}]", "variant")
        # a single occurrence behaves as a one-element array (paths.py)
        single = x if step.index == 0 else F.lit(None).cast("variant")
        return F.when(F.schema_of_variant(x).startswith("ARRAY<"), item).otherwise(single)

    return V.let(got, index)


def _numeric(v: V.Val) -> tuple[S, S, S]:
    """The ``tag``, ``i`` and ``f`` of a numeric view as struct fields of fixed types."""
    return v.tag.alias("tag"), v.i.cast("long").alias("i"), v.f.cast("double").alias("f")


def _balanced(join: Callable[[S, S], S], items: list[S]) -> S:
    """``join`` (associative) over ``items`` in order, as a tree of depth log2(len)."""
    while len(items) > 1:
        pairs = [join(a, b) for a, b in zip(items[::2], items[1::2], strict=False)]
        items = pairs + items[len(pairs) * 2 :]
    return items[0]


def _code(b: S) -> S:
    """A boolean S as an int: FALSE 0, TRUE 1, NULL 2 (``b`` appears once)."""
    return F.coalesce(b.cast("int"), F.lit(2))


def _any(tests: list[S]) -> S:
    return reduce(lambda a, b: a | b, tests) if tests else F.lit(False)


def _byte_chars(s: S) -> S:
    """``s`` re-read as ISO-8859-1: one char per UTF-8 byte (sowlib's byte semantics)."""
    return F.decode(F.encode(s, "UTF-8"), "ISO-8859-1")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
