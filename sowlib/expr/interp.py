"""A slow, obviously-correct tree-walking interpreter: the reference for ``to_python``.

No specialisation: every node goes through the general helpers of
:mod:`sowlib.expr.runtime`. Tests check compiled filters against it.
Imports only ``expr`` modules.
"""

from __future__ import annotations

from typing import Any, assert_never

from sowlib.expr import like, runtime
from sowlib.expr.context import EvalContext
from sowlib.expr.functions import FUNCTIONS, call_function
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

__all__ = ["evaluate"]


def evaluate(node: Node, doc: Any, ctx: EvalContext | None = None) -> Any:
    """Evaluate ``node`` against ``doc``; the raw value (lists and MISSING included)."""
    ev = evaluate
    match node:
        case Literal(value=v):
            return v
        case Field(path=p):
            return p.resolve(doc)
        case Neg(operand=o):
            return runtime.negate(ev(o, doc, ctx))
        case Arith():
            first, steps = arith_chain(node)  # a loop, not one recursion per operator
            acc = ev(first, doc, ctx)
            for op, b in steps:
                acc = runtime.arith(op, acc, ev(b, doc, ctx))
            return acc
        case Compare(op=op, left=a, right=b):
            return runtime.compare_any(op, ev(a, doc, ctx), ev(b, doc, ctx))
        case Between(value=v, low=lo, high=hi, negated=neg):
            return runtime.between(ev(v, doc, ctx), ev(lo, doc, ctx), ev(hi, doc, ctx), neg)
        case InList(value=v, items=items, negated=neg):
            return runtime.in_list(ev(v, doc, ctx), [ev(i, doc, ctx) for i in items], neg)
        case Like(value=v, pattern=pat, raw=raw, negated=neg):
            return runtime.like_test(ev(v, doc, ctx), like.like_matcher(pat, raw), neg)
        case BeginsWith(value=v, items=items, negated=neg):
            vals = [ev(i, doc, ctx) for i in items]
            return runtime.affix_test(ev(v, doc, ctx), vals, neg, False)
        case EndsWith(value=v, items=items, negated=neg):
            vals = [ev(i, doc, ctx) for i in items]
            return runtime.affix_test(ev(v, doc, ctx), vals, neg, True)
        case IsNull(value=v, negated=neg):
            return runtime.is_null(ev(v, doc, ctx)) != neg
        case IsNaN(value=v, negated=neg):
            return runtime.is_nan(ev(v, doc, ctx)) != neg
        case Not(operand=o):
            return runtime.logic_not(ev(o, doc, ctx))
        case And():
            # (a AND b) AND c, left to right: the first operand that is not TRUE is the
            # result, FALSE or a NULL ending the evaluation (spec §2.5 table)
            for operand in chain(node):
                value = runtime.to_logic(ev(operand, doc, ctx))
                if value is not True:
                    return value
            return True
        case Or():
            for operand in chain(node):
                value = runtime.to_logic(ev(operand, doc, ctx))
                if value is not False:
                    return value
            return False
        case Call(name=name, args=args):
            spec = FUNCTIONS[name]
            if spec.lazy:  # IF
                cond = runtime.to_logic(ev(args[0], doc, ctx))
                return ev(args[1] if cond is True else args[2], doc, ctx)
            return call_function(spec, [ev(a, doc, ctx) for a in args], ctx)
        case _:
            assert_never(node)
