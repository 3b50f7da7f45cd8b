"""Generate one Python function for a boolean filter's hot shapes (a measured speed trick).

Nested closures cost a call per node (~0.1 us each here); for AND/OR/NOT
trees of field-vs-literal comparisons and IN over literals this module emits
a single ``def`` with the same fast paths as :mod:`sowlib.expr.to_python`
inlined, and calls the compiled closure for every other node. Literals and
helpers reach the generated code through its namespace, never through the
source text. Imports only ``expr`` modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sowlib.document import MISSING
from sowlib.expr import runtime
from sowlib.expr.context import EvalContext
from sowlib.expr.nodes import And, Compare, Field, InList, Literal, Node, Not, Or
from sowlib.expr.to_python import _FLIP, _SAFE_INT, boolean_nodes, compile_node

__all__ = ["Matcher", "generate"]

Matcher = Callable[[Any, EvalContext | None], bool]
_PY_OP = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _Gen:
    def __init__(self, booleans: dict[int, bool]) -> None:
        self.ns: dict[str, Any] = {"M": MISSING, "S": _SAFE_INT}
        self.n = 0
        self.fast = True  # emitting the branch where ``d`` is known to be a dict
        self.booleans = booleans  # boolean_nodes() of the whole filter, looked up by id
        self.closures: dict[int, str] = {}  # id(node) -> namespace name of its closure

    def name(self, prefix: str, value: Any) -> str:
        self.n += 1
        key = f"{prefix}{self.n}"
        self.ns[key] = value
        return key

    def const(self, prefix: str, value: Any) -> str:
        """Source for a constant: its repr when that reads back exactly, else a name."""
        if type(value) in (str, int) or (type(value) is float and math.isfinite(value)):
            return repr(value)
        if type(value) is frozenset and all(type(x) in (str, int) for x in value):
            return "{" + ", ".join(sorted(map(repr, value))) + "}" if value else "()"
        return self.name(prefix, value)

    def get(self, f: Field) -> str:
        steps = f.path.steps
        if self.fast and len(steps) == 1 and steps[0].index is None:
            # a missing field reads as None, the same NULL as MISSING; an
            # Element (XML) value reaches the slow path, which reads its text
            return f"d.get({steps[0].name!r})"
        return f"{self.name('g', f.path.getter)}(d)"

    def boolean(self, node: Node) -> bool:
        return self.booleans.get(id(node), False)

    def expr(self, node: Node) -> str:
        if isinstance(node, And) and self.boolean(node):
            return f"({self.expr(node.left)} and {self.expr(node.right)})"
        if isinstance(node, Or) and self.boolean(node):
            return f"({self.expr(node.left)} or {self.expr(node.right)})"
        if isinstance(node, Not) and self.boolean(node.operand):
            return f"(not {self.expr(node.operand)})"
        if isinstance(node, Compare):
            code = self.compare(node)
            if code is not None:
                return code
        if isinstance(node, InList):
            code = self.in_list(node)
            if code is not None:
                return code
        name = self.closures.get(id(node))
        if name is None:  # the fast and the general body share one closure per node
            name = self.closures[id(node)] = self.name("c", compile_node(node))
        return f"{name}(d, c)"

    def compare(self, node: Compare) -> str | None:
        op, a, b = node.op, node.left, node.right
        if isinstance(b, Field) and isinstance(a, Literal):
            a, b, op = b, a, _FLIP[op]
        if not (isinstance(a, Field) and isinstance(b, Literal)) or b.value is None:
            return None
        lit = b.value
        slow = self.name("s", lambda v, op=op, lit=lit: runtime.compare_any(op, v, lit))
        lname = self.const("l", lit)
        py = _PY_OP[op]
        self.n += 1
        v, t = f"v{self.n}", f"t{self.n}"
        get = self.get(a)
        if isinstance(lit, str) and op == "=":
            # equal means a matching string; unequal strings are FALSE without a type test
            return f"(({v} := {get}) == {lname} or type({v}) is not str and {slow}({v}))"
        if isinstance(lit, str):
            return f"({v} {py} {lname} if type({v} := {get}) is str and {v} else {slow}({v}))"
        if isinstance(lit, int) and abs(lit) < _SAFE_INT:
            fname = self.const("f", float(lit))
            return (
                f"({v} {py} {lname} if ({t} := type({v} := {get})) is int"
                f" else {v} {py} {fname} if {t} is float else {slow}({v}))"
            )
        if isinstance(lit, float):
            return (
                f"({v} {py} {lname} if ({t} := type({v} := {get})) is float"
                f" else float({v}) {py} {lname} if {t} is int else {slow}({v}))"
            )
        return None

    def in_list(self, node: InList) -> str | None:
        if not isinstance(node.value, Field):
            return None
        if not all(isinstance(i, Literal) for i in node.items):
            return None
        values = [i.value for i in node.items if isinstance(i, Literal) and i.value is not None]
        strs = frozenset(x for x in values if isinstance(x, str))
        nums = frozenset(x for x in values if not isinstance(x, str))
        if any(runtime.parse_number(s) is not None for s in strs) or any(
            isinstance(x, int) and abs(x) >= _SAFE_INT for x in nums
        ):
            return None
        neg = node.negated
        sname, nname = self.const("ss", strs), self.const("ns", nums)
        slow = self.name("i", lambda x, values=values, neg=neg: runtime.in_list(x, values, neg))
        self.n += 1
        v, t = f"v{self.n}", f"t{self.n}"
        get = self.get(node.value)
        miss = "True" if neg else "False"
        hit = "False" if neg else "True"
        if not nums and not neg:
            return f"({v} in {sname} if type({v} := {get}) is str else {slow}({v}))"
        str_miss = f"{hit} if {v} in {sname} else " + (f"{slow}({v})" if nums else miss)
        num_test = f"({v} in {nname}) != {neg}"
        return (
            f"(({str_miss}) if ({t} := type({v} := {get})) is str and {v}"
            f" else {num_test} if ({t} is int and -S < {v} < S) or {t} is float"
            f" else {slow}({v}))"
        )


def generate(node: Node) -> Matcher:
    """One function ``(doc, ctx=None) -> bool`` for a boolean ``node``.

    Raises:
        ValueError: ``node`` can evaluate to NULL (use the closures instead).
    """
    booleans = boolean_nodes(node)
    if not booleans[id(node)]:
        raise ValueError("generate() needs a node that is always TRUE or FALSE")
    gen = _Gen(booleans)
    fast_body = gen.expr(node)
    gen.fast = False
    general_body = gen.expr(node)
    ns = gen.ns
    source = (
        "def _filter(d, c=None, type=type, float=float, dict=dict):\n"
        f"    if type(d) is dict:\n        return {fast_body}\n"
        f"    return {general_body}\n"
    )
    exec(compile(source, "<sowlib filter>", "exec"), ns)
    fn: Matcher = ns["_filter"]
    return fn
