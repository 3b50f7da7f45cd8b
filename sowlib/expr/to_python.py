"""Compile an AST to nested Python closures ``(doc, ctx) -> value``.

Common shapes (field vs literal, IN over literals, LIKE on a field, AND/OR of
predicates) get specialised closures with a fast path for the usual types
and a fall-back to the general rule of :mod:`sowlib.expr.runtime`; each must
agree with the reference interpreter :mod:`sowlib.expr.interp`, which
``tests/expr/test_fast_compare.py`` and ``tests/expr/test_properties.py`` check on
random filters and documents. Imports only ``expr`` and ``paths``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never

from sowlib.errors import SowError
from sowlib.expr import like, runtime
from sowlib.expr.context import EvalContext
from sowlib.expr.fast_compare import field_compare
from sowlib.expr.functions import CONVERTERS, FUNCTIONS, FunctionSpec
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
)
from sowlib.expr.operators import FLIP, SAFE_INT
from sowlib.paths import FieldPath

__all__ = ["Compiled", "boolean_nodes", "compile_node", "compile_tree", "is_boolean"]

Compiled = Callable[[Any, EvalContext | None], Any]

_PREDICATES = (Compare, Between, InList, Like, BeginsWith, EndsWith, IsNull, IsNaN)
_LOGIC = (And, Or, Not)


def is_boolean(node: Node) -> bool:
    """True when ``node`` can only evaluate to True or False (never NULL); O(size of the tree)."""
    return boolean_nodes(node)[id(node)]


def boolean_nodes(node: Node) -> dict[int, bool]:
    """``id(n) -> is_boolean(n)`` for ``node`` and every AND/OR/NOT/predicate below it.

    One bottom-up pass, O(size of the tree): look nodes up while ``node`` is alive.
    Other nodes (values) are absent, and they are never boolean.
    """
    out: dict[int, bool] = {}
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        if isinstance(n, _PREDICATES):
            out[id(n)] = True
        elif isinstance(n, Not):
            if done:
                out[id(n)] = out.get(id(n.operand), False)
            else:
                stack += ((n, True), (n.operand, False))
        elif isinstance(n, And | Or):
            if done:
                out[id(n)] = out.get(id(n.left), False) and out.get(id(n.right), False)
            else:
                stack += ((n, True), (n.right, False), (n.left, False))
        else:
            out[id(n)] = False
    return out


def _getter(path: FieldPath) -> Callable[[Any], Any]:
    # the path's own resolver, skipping one method call on the hot path
    return path.getter


def compile_node(node: Node) -> Compiled:
    """Compile ``node`` to a closure; O(size of the tree)."""
    return _compile(node)[0]


def compile_tree(node: Node) -> tuple[Compiled, bool]:
    """Compile ``node`` to a closure; also :func:`is_boolean` of ``node``, found on the way.

    O(size of the tree), one pass: no :func:`boolean_nodes` table is built.
    """
    return _compile(node)


def _compile(node: Node) -> tuple[Compiled, bool]:
    """The closure for ``node`` and whether it is boolean (as :func:`boolean_nodes` says)."""
    # the commonest nodes of a filter (AND/OR over comparisons) are matched first
    match node:
        case And():
            return _and(chain(node))
        case Or():
            return _or(chain(node))
        case Compare(op=op, left=a, right=b):
            return _compare(op, a, b), True
        case InList(value=v, items=items, negated=neg):
            return _in_list(v, items, neg), True
        case Like(value=v, pattern=pat, raw=raw, negated=neg):
            return _like(v, like.like_matcher(pat, raw), neg), True
        case Not(operand=o):
            f, boolean = _compile(o)
            if boolean:
                return (lambda d, c: not f(d, c)), True
            return (lambda d, c: runtime.logic_not(f(d, c))), False
        case Literal(value=v):
            return (lambda d, c: v), False
        case Field(path=p):
            get = _getter(p)
            return (lambda d, c: get(d)), False
        case Neg(operand=o):
            f = compile_node(o)
            return (lambda d, c: runtime.negate(f(d, c))), False
        case Arith():
            return _arith(*arith_chain(node)), False
        case Between(value=v, low=lo, high=hi, negated=neg):
            fv, flo, fhi = compile_node(v), compile_node(lo), compile_node(hi)
            return (lambda d, c: runtime.between(fv(d, c), flo(d, c), fhi(d, c), neg)), True
        case BeginsWith(value=v, items=items, negated=neg):
            return _affix(v, items, neg, False), True
        case EndsWith(value=v, items=items, negated=neg):
            return _affix(v, items, neg, True), True
        case IsNull(value=v, negated=neg):
            return _is_null(v, neg), True
        case IsNaN(value=v, negated=neg):
            f = compile_node(v)
            return (lambda d, c: runtime.is_nan(f(d, c)) != neg), True
        case Call(name=name, args=args):
            return _call(FUNCTIONS[name], args), False
        case _:
            assert_never(node)


def _is_null(v: Node, neg: bool) -> Compiled:
    f = compile_node(v)
    is_null = runtime.is_null
    if neg:
        return lambda d, c: not is_null(f(d, c))
    return lambda d, c: is_null(f(d, c))


def _and(operands: list[Node]) -> tuple[Compiled, bool]:
    """A chain ``a AND b AND ...``: one closure over its operands, left to right."""
    parts = [_compile(o) for o in operands]
    fs = [f for f, _ in parts]
    if all(boolean for _, boolean in parts):
        if len(fs) == 2:
            fa, fb = fs
            return (lambda d, c: fa(d, c) and fb(d, c)), True
        if len(fs) == 3:
            fa, fb, fc = fs
            return (lambda d, c: fa(d, c) and fb(d, c) and fc(d, c)), True

        def all_of(d: Any, c: EvalContext | None) -> bool:
            # a plain loop: all() over a generator allocates one per document
            for f in fs:  # noqa: SIM110
                if not f(d, c):
                    return False
            return True

        return all_of, True
    to_logic = runtime.to_logic

    def and3(d: Any, c: EvalContext | None) -> bool | None:
        for f in fs:
            v = to_logic(f(d, c))
            if v is not True:
                return v  # FALSE, or NULL ending the evaluation (spec §2.5 table)
        return True

    return and3, False


def _or(operands: list[Node]) -> tuple[Compiled, bool]:
    """A chain ``a OR b OR ...``: one closure over its operands, left to right."""
    parts = [_compile(o) for o in operands]
    fs = [f for f, _ in parts]
    if all(boolean for _, boolean in parts):
        if len(fs) == 2:
            fa, fb = fs
            return (lambda d, c: fa(d, c) or fb(d, c)), True
        if len(fs) == 3:
            fa, fb, fc = fs
            return (lambda d, c: fa(d, c) or fb(d, c) or fc(d, c)), True

        def any_of(d: Any, c: EvalContext | None) -> bool:
            for f in fs:  # noqa: SIM110 (as all_of)
                if f(d, c):
                    return True
            return False

        return any_of, True
    to_logic = runtime.to_logic

    def or3(d: Any, c: EvalContext | None) -> bool | None:
        for f in fs:
            v = to_logic(f(d, c))
            if v is not False:
                return v  # TRUE, or NULL ending the evaluation (spec §2.5 table)
        return False

    return or3, False


def _arith(first: Node, steps: list[tuple[str, Node]]) -> Compiled:
    """A left-nested arithmetic chain, applied left to right (every operand evaluated)."""
    arith = runtime.arith
    f0 = compile_node(first)
    if len(steps) == 1:
        ((op, b),) = steps
        fb = compile_node(b)
        return lambda d, c: arith(op, f0(d, c), fb(d, c))
    rest = [(op, compile_node(b)) for op, b in steps]

    def apply(d: Any, c: EvalContext | None) -> Any:
        acc = f0(d, c)
        for op, f in rest:
            acc = arith(op, acc, f(d, c))
        return acc

    return apply


def _key(path: FieldPath) -> str | None:
    """The dict key a one-step path reads (the closures inline ``d.get(key)``), else None."""
    steps = path.steps
    return steps[0].name if len(steps) == 1 and steps[0].index is None else None


def _compare(op: str, a: Node, b: Node) -> Compiled:
    if isinstance(b, Field) and isinstance(a, Literal):
        a, b, op = b, a, FLIP[op]
    if isinstance(a, Field) and isinstance(b, Literal):
        lit = b.value
        if lit is None:
            return _never  # a NULL side is never TRUE (spec §2.4 row 1)
        fast = field_compare(op, _key(a.path), _getter(a.path), lit)
        if fast is not None:
            return fast
    return _compare_general(op, compile_node(a), compile_node(b))


def _compare_general(op: str, fa: Compiled, fb: Compiled) -> Compiled:
    compare_any = runtime.compare_any
    return lambda d, c: compare_any(op, fa(d, c), fb(d, c))


def _never(d: Any, c: EvalContext | None) -> bool:
    return False


def _in_list(v: Node, items: tuple[Node, ...], neg: bool) -> Compiled:
    fv = compile_node(v)
    in_list = runtime.in_list
    # one loop, no generator per property (compile time): a string member that reads
    # as a number could equal a numeric value, and huge ints compare through float;
    # both take the general rule
    values: list[Any] = []
    str_values: list[str] = []
    num_values: list[int | float] = []
    general = False
    for item in items:
        if not isinstance(item, Literal):
            fitems = [compile_node(i) for i in items]
            return lambda d, c: in_list(fv(d, c), [f(d, c) for f in fitems], neg)
        x = item.value
        if x is None:
            continue
        values.append(x)
        if isinstance(x, str):
            str_values.append(x)
            general = general or runtime.parse_number(x) is not None
        else:
            num_values.append(x)
            general = general or (isinstance(x, int) and abs(x) >= SAFE_INT)
    if general or not isinstance(v, Field):
        return lambda d, c: in_list(fv(d, c), values, neg)
    strs, nums = frozenset(str_values), frozenset(num_values)
    get = _getter(v.path)
    key = _key(v.path)
    has_nums = bool(nums)

    def test(d: Any, c: EvalContext | None) -> bool:
        x: Any = d.get(key) if key is not None and type(d) is dict else get(d)
        t = type(x)
        if t is str and x:
            if x in strs:
                return not neg
            if not has_nums:
                return neg
        elif (t is int and -SAFE_INT < x < SAFE_INT) or t is float:
            return (x in nums) != neg
        return in_list(x, values, neg)

    return test


def _like(v: Node, matcher: Callable[[str], bool], neg: bool) -> Compiled:
    like_test = runtime.like_test
    if isinstance(v, Field):
        get = _getter(v.path)
        key = _key(v.path)

        def test(d: Any, c: EvalContext | None) -> bool:
            x = d.get(key) if key is not None and type(d) is dict else get(d)
            if type(x) is str and x:
                return matcher(x) != neg
            return like_test(x, matcher, neg)

        return test
    fv = compile_node(v)
    return lambda d, c: like_test(fv(d, c), matcher, neg)


def _affix(v: Node, items: tuple[Node, ...], neg: bool, ends: bool) -> Compiled:
    fv = compile_node(v)
    affix_test = runtime.affix_test
    fitems = [compile_node(i) for i in items]
    if all(isinstance(i, Literal) for i in items):
        consts = [i.value for i in items if isinstance(i, Literal)]
        return lambda d, c: affix_test(fv(d, c), consts, neg, ends)
    return lambda d, c: affix_test(fv(d, c), [f(d, c) for f in fitems], neg, ends)


def _call(spec: FunctionSpec, args: tuple[Node, ...]) -> Compiled:
    impl = spec.impl
    if spec.context:
        return lambda d, c: impl(c)
    fargs = [compile_node(a) for a in args]
    if spec.lazy:  # IF(cond, a, b): only the chosen branch runs (spec §1.6 [R])
        fcond, fa, fb = fargs
        to_logic = runtime.to_logic
        return lambda d, c: fa(d, c) if to_logic(fcond(d, c)) is True else fb(d, c)
    convs = [CONVERTERS[spec.kind_of(i)] for i in range(len(args))]
    pairs = list(zip(convs, fargs, strict=True))
    strict = spec.strict

    def call(d: Any, c: EvalContext | None) -> Any:
        vals = [conv(f(d, c)) for conv, f in pairs]
        if strict and None in vals:
            return None
        try:
            r = impl(*vals)
        except SowError:
            raise
        except (ArithmeticError, ValueError):
            return None  # a value the function cannot compute with (as apply_impl)
        return None if type(r) is str and not r else r

    if not args and spec.deterministic:
        const = call(None, None)  # TRUE_VALUE(), NAN_VALUE(): fold once
        return lambda d, c: const
    return call
