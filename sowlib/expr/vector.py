"""Filters evaluated over columns of field values (numpy) instead of one document at a time.

A filter compiles to a tree of AND/OR/NOT over *leaves*; a leaf is a sub-expression
that names one field (or none). Each column holds, per row, a number (integers of at
most 53 bits and non-NaN floats, compared in bulk) or a code into the column's
dictionary of every other value (text, NULL, missing, booleans, huge integers,
arrays, objects). A leaf is evaluated once per dictionary value by the closure
compiler (the reference) and the answers are gathered by code; numbers go through
numpy for comparisons, BETWEEN and IN, and once per distinct number for anything
else. AND/OR/NOT follow the three-valued table of spec §2.5 on a (true, null) pair
of masks. Anything else (a leaf over two fields, a context function) makes
:func:`compile_vector` return None: the caller runs the closures. numpy is optional.
Imports only ``expr``, ``paths`` and ``document``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sowlib.document import MISSING
from sowlib.errors import SowError
from sowlib.expr import runtime
from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.nodes import (
    And,
    Between,
    Call,
    Compare,
    Field,
    InList,
    IsNaN,
    IsNull,
    Literal,
    Node,
    Not,
    Or,
    chain,
    walk,
)
from sowlib.expr.operators import FLIP, SAFE_INT
from sowlib.expr.rebind import rebind
from sowlib.expr.to_python import Compiled, compile_tree
from sowlib.paths import FieldPath

# numpy, imported by the first compile (importing sowlib does not load it); None until
# then, and for good when it is not installed (filters then run as closures).
np: Any = None
_np_tried = False

__all__ = [
    "FLOAT_CODE",
    "INT_CODE",
    "LEAF_NODES",
    "NUMBER_ANSWERS",
    "ColumnData",
    "Frame",
    "VectorFilter",
    "available",
    "compile_vector",
]

#: ``code`` of a row whose value is an integer held exactly in ``num``.
INT_CODE = -1
#: ``code`` of a row whose value is a (non-NaN) float held in ``num``.
FLOAT_CODE = -2
#: Largest leaf (in nodes) evaluated per distinct value; a bigger one is left to closures.
LEAF_NODES = 256
#: Most per-number answers a leaf remembers between queries.
NUMBER_ANSWERS = 1 << 20
# Leaf answers per value, as int8: FALSE, TRUE, NULL.
_FALSE, _TRUE, _NULL = 0, 1, 2
_UFUNCS = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal"}
_UFUNCS |= {">": "greater", ">=": "greater_equal"}
# Every leaf reads its one field through this path (the value is the document's only field).
_VALUE = FieldPath.parse("/v")

Mask = Any  # a numpy bool array (numpy's types are optional at run time)


def available() -> bool:
    """True when numpy is installed (the vector engine can run); imports it."""
    global np, _np_tried
    if not _np_tried:
        _np_tried = True
        try:
            import numpy
        except ImportError:
            return False
        np = numpy
    return np is not None


class ColumnData(Protocol):
    """One field's values for rows ``0..n-1``.

    ``num[i]`` is the value when ``code[i]`` is :data:`INT_CODE` or :data:`FLOAT_CODE`;
    otherwise the value is ``values[code[i]]``. ``generation`` changes whenever codes
    are renumbered (values already in ``values`` never change otherwise).
    """

    @property
    def num(self) -> Any: ...

    @property
    def code(self) -> Any: ...

    @property
    def values(self) -> Sequence[Any]: ...

    @property
    def generation(self) -> int: ...


class Frame(Protocol):
    """Rows ``0..rows-1`` and a column per field a filter names."""

    @property
    def rows(self) -> int: ...

    def column(self, path: FieldPath) -> ColumnData: ...


class _Unsupported(Exception):
    """Internal: a construct the vector compiler leaves to the closures."""


class _Tri:
    """A three-valued result: ``t`` rows are TRUE, ``n`` rows NULL (None: none), the rest FALSE."""

    __slots__ = ("n", "t")

    def __init__(self, t: Mask, n: Mask | None) -> None:
        self.t = t
        self.n = n


Program = Callable[[Frame], _Tri]


def _encode(value: Any, boolean: bool) -> int:
    if boolean:
        return _TRUE if value else _FALSE
    logic = runtime.to_logic(value)
    return _NULL if logic is None else _TRUE if logic else _FALSE


def _num_compare(op: str, lit: Any) -> Callable[[Any], Mask] | None:
    """``number op lit`` for exact numbers in bulk (spec §2.4 rows 1, 3-5), or None."""
    if lit is None:
        return lambda x: np.zeros(len(x), dtype=bool)  # NULL side: never TRUE
    if isinstance(lit, str):
        num = runtime.parse_number(lit)
        if num is None:  # a non-numeric string is greater than every number
            const = op in ("<", "<=", "!=")
            return lambda x: np.full(len(x), const, dtype=bool)
        lit = num
    if isinstance(lit, bool) or not isinstance(lit, int | float):
        return None
    if isinstance(lit, int) and not -SAFE_INT <= lit <= SAFE_INT:
        return None  # the int/int rule is exact: float64 could round this literal
    if lit != lit:
        return None
    ufunc = getattr(np, _UFUNCS[op])
    bound = float(lit)
    return lambda x: ufunc(x, bound)


def _literal(node: Node) -> Any:
    if not isinstance(node, Literal):
        raise _Unsupported
    return node.value


def _numeric(node: Node) -> Callable[[Any], Mask] | None:
    """The bulk form of a one-field predicate on numbers, or None (per distinct number)."""
    try:
        match node:
            case Compare(op=op, left=Field(), right=r):
                return _num_compare(op, _literal(r))
            case Compare(op=op, left=l, right=Field()):
                return _num_compare(FLIP[op], _literal(l))
            case Between(value=Field(), low=lo, high=hi, negated=neg):
                ge, le = _num_compare(">=", _literal(lo)), _num_compare("<=", _literal(hi))
                if ge is None or le is None:
                    return None
                return lambda x: (ge(x) & le(x)) ^ neg
            case InList(value=Field(), items=items, negated=neg):
                tests = [_num_compare("=", _literal(i)) for i in items if _literal(i) is not None]
                if any(t is None for t in tests):
                    return None
                return lambda x: _any_of(tests, x) ^ neg
            case IsNull(value=Field(), negated=neg) | IsNaN(value=Field(), negated=neg):
                return lambda x: np.full(len(x), neg, dtype=bool)  # a number is neither
    except _Unsupported:
        return None
    return None


def _any_of(tests: list[Callable[[Any], Mask] | None], x: Any) -> Mask:
    out = np.zeros(len(x), dtype=bool)
    for test in tests:
        assert test is not None
        out |= test(x)
    return out


class _Leaf:
    """A sub-expression over one field: per dictionary value by the closures, numbers in bulk."""

    def __init__(self, node: Node, path: FieldPath) -> None:
        self.path = path
        fn, self.boolean = compile_tree(rebind(node, path, _VALUE))
        self.fn: Compiled = fn
        self.numeric = _numeric(node)
        # (INT_CODE or FLOAT_CODE, number) -> answer, for leaves without a bulk form
        self.numbers: dict[tuple[int, float], int] = {}
        # per column: (generation, answers per value, padded TRUE and NULL masks), extended
        # as values are added
        self.tables: weakref.WeakKeyDictionary[Any, tuple[int, Any, Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def answer(self, value: Any) -> int:
        doc = {} if value is MISSING else {"v": value}
        return _encode(self.fn(doc, None), self.boolean)

    def table(self, col: ColumnData) -> tuple[Any, Any]:
        """``(true, null)``: bool arrays over ``col.values`` plus two False entries, so
        a number row's negative code indexes them harmlessly."""
        values = col.values
        got = self.tables.get(col)
        if got is not None and got[0] == col.generation:
            answers = got[1]
            if len(answers) < len(values):
                more = np.fromiter(
                    map(self.answer, values[len(answers) :]), np.int8, len(values) - len(answers)
                )
                answers = np.concatenate((answers, more))
                got = None
        else:
            answers = np.fromiter(map(self.answer, values), np.int8, len(values))
            got = None
        if got is None:
            padded = np.concatenate((answers, np.array([_FALSE, _FALSE], dtype=np.int8)))
            got = (col.generation, answers, padded == _TRUE, padded == _NULL)
            self.tables[col] = got
        return got[2], got[3]

    def __call__(self, frame: Frame) -> _Tri:
        col = frame.column(self.path)
        code = col.code
        numbers = code < 0
        count = int(np.count_nonzero(numbers))
        if count == len(code) and self.numeric is not None:
            return _Tri(self.numeric(col.num), None)  # a column of numbers only
        trues, nulls = self.table(col)
        if count == 0:
            return _Tri(trues[code], None if self.boolean else nulls[code])
        if self.numeric is not None:
            return _Tri(np.where(numbers, self.numeric(col.num), trues[code]), None)
        got = self._per_number(code, col.num)
        t = np.where(numbers, got == _TRUE, trues[code])
        return _Tri(t, None if self.boolean else np.where(numbers, got == _NULL, nulls[code]))

    def _per_number(self, code: Any, num: Any) -> Any:
        """The leaf's answer for each number, computed once per distinct number (and
        remembered for the next query, up to :data:`NUMBER_ANSWERS` numbers)."""
        got = np.zeros(len(code), dtype=np.int8)
        known = self.numbers
        if len(known) > NUMBER_ANSWERS:
            known.clear()
        for kind, convert in ((INT_CODE, int), (FLOAT_CODE, float)):
            rows = code == kind
            if rows.any():
                distinct, inverse = np.unique(num[rows], return_inverse=True)
                answers = []
                for x in distinct.tolist():
                    key = (kind, x)
                    answer = known.get(key)
                    if answer is None:
                        answer = known[key] = self.answer(convert(x))
                    answers.append(answer)
                got[rows] = np.asarray(answers, dtype=np.int8)[inverse]
        return got


def _constant(node: Node) -> Program:
    fn, boolean = compile_tree(node)
    answer = _encode(fn({}, None), boolean)

    def run(frame: Frame) -> _Tri:
        rows = frame.rows
        t = np.full(rows, answer == _TRUE, dtype=bool)
        return _Tri(t, None if answer != _NULL else np.ones(rows, dtype=bool))

    return run


def _and(parts: list[Program]) -> Program:
    def run(frame: Frame) -> _Tri:
        acc = parts[0](frame)
        t, n = acc.t, acc.n
        for part in parts[1:]:
            b = part(frame)
            # and3: the first operand that is not TRUE decides (a NULL left ends it)
            if b.n is not None:
                n = (t & b.n) if n is None else (n | (t & b.n))
            t = t & b.t
        return _Tri(t, n)

    return run


def _or(parts: list[Program]) -> Program:
    def run(frame: Frame) -> _Tri:
        acc = parts[0](frame)
        t, n = acc.t, acc.n
        for part in parts[1:]:
            b = part(frame)
            # or3: the first operand that is not FALSE decides (a NULL left ends it)
            false = ~t if n is None else ~(t | n)
            if b.n is not None:
                n = (false & b.n) if n is None else (n | (false & b.n))
            t = t | (false & b.t)
        return _Tri(t, n)

    return run


def _not(part: Program) -> Program:
    def run(frame: Frame) -> _Tri:
        a = part(frame)
        return _Tri(~a.t if a.n is None else ~(a.t | a.n), a.n)

    return run


def _leaf(node: Node, fields: set[FieldPath]) -> Program:
    nodes = walk(node)
    if len(nodes) > LEAF_NODES:
        raise _Unsupported
    for n in nodes:
        if isinstance(n, Call):
            spec = FUNCTIONS[n.name]
            if spec.context or not spec.deterministic:
                raise _Unsupported  # the answer depends on more than the field's value
    paths = {n.path for n in nodes if isinstance(n, Field)}
    if not paths:
        return _constant(node)
    if len(paths) > 1:
        raise _Unsupported
    (path,) = paths
    fields.add(path)
    return _Leaf(node, path)


def _count_leaves(node: Node) -> int:
    stack, count = [node], 0
    while stack:
        n = stack.pop()
        if isinstance(n, And | Or):
            stack.extend(chain(n))
        elif isinstance(n, Not):
            stack.append(n.operand)
        else:
            count += 1
    return count


def _compile(node: Node, fields: set[FieldPath]) -> Program:
    match node:
        case And():
            return _and([_compile(o, fields) for o in chain(node)])
        case Or():
            return _or([_compile(o, fields) for o in chain(node)])
        case Not(operand=o):
            return _not(_compile(o, fields))
        case _:
            return _leaf(node, fields)


class VectorFilter:
    """A filter compiled to run over columns; :meth:`run` gives the rows that match.

    Attributes:
        fields: the field paths whose columns :meth:`run` reads.
        leaves: how many one-field sub-expressions it evaluates.
    """

    def __init__(self, program: Program, fields: tuple[FieldPath, ...], leaves: int) -> None:
        self._program = program
        self.fields = fields
        self.leaves = leaves

    def run(self, frame: Frame) -> Mask:
        """A bool array over the frame's rows: True where the filter is TRUE.

        O(rows) numpy work per leaf, plus one closure call per dictionary value (and
        per distinct number for leaves without a bulk form) not seen before.

        Raises:
            SowError: a leaf raised it for some value (e.g. a regex timeout); the caller
                falls back to evaluating documents.
        """
        return self._program(frame).t


def compile_vector(node: Node) -> VectorFilter | None:
    """Compile ``node`` to a :class:`VectorFilter`, or None when a construct needs the
    closures (a sub-expression over two fields, a context or clock function) or numpy
    is missing. O(size of the tree).

    Example:
        >>> compile_vector(parse_filter("/a > 1 OR /b = 'x'")).fields  # doctest: +SKIP
        (FieldPath('/a'), FieldPath('/b'))
    """
    if not available():
        return None
    fields: set[FieldPath] = set()
    try:
        program = _compile(node, fields)
    except (_Unsupported, RecursionError, SowError):
        # SowError: a constant part raised when folded; the closures raise it (or not,
        # past a short circuit) document by document
        return None
    ordered = tuple(sorted(fields, key=FieldPath.to_text))
    return VectorFilter(program, ordered, _count_leaves(node))
