"""The evaluation fast paths agree with their references.

``fast_compare.field_compare`` (one closure per operator and literal type) against
``runtime.compare_any`` on the field's resolved value; the compiled shapes the
closures specialise (a field against literals in IN, LIKE, AND/OR chains of two and
three predicates, flipped comparisons) against the reference interpreter.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.document import Element
from sowlib.errors import RegexTimeoutError
from sowlib.expr.fast_compare import field_compare
from sowlib.expr.interp import evaluate
from sowlib.expr.nodes import And, Compare, Field, InList, Like, Literal, Node, Or, walk
from sowlib.expr.operators import COMPARISONS, SAFE_INT
from sowlib.expr.runtime import compare_any, normalize
from sowlib.expr.to_python import compile_node
from sowlib.paths import parse_path
from tests.expr.strategies import nodes

ops = st.sampled_from(sorted(COMPARISONS))
#: Numbers on both sides of the exact-as-float bound, and the floats that are not numbers.
edge_numbers = st.sampled_from(
    [0, 1, -1, SAFE_INT - 1, SAFE_INT, SAFE_INT + 1, -SAFE_INT, 2**63, 2**64 - 1, -(2**63)]
)
edge_floats = st.sampled_from(
    [0.0, -0.0, 0.5, float(SAFE_INT), 1e300, math.inf, -math.inf, math.nan]
)
numbers = st.one_of(edge_numbers, edge_floats, st.integers(-100, 100), st.floats())
strings = st.sampled_from(["a", "b", "ab", "A", "1", "01", "1.0", "2.5", " 1", "1e3", "nan", "é"])
#: Literals as the parser makes them: never NULL (``''`` parses to NULL).
literals = st.one_of(numbers, strings)
scalars = st.one_of(st.none(), st.booleans(), st.just(""), numbers, strings)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.builds(Element, st.just({}), scalars),
    st.fixed_dictionaries({"x": scalars}),
)


def _resolved_shapes(value: Any) -> list[tuple[str, Any]]:
    """Documents holding ``value`` for paths the closures read each way (``(path, doc)``)."""
    return [
        ("/f", {"f": value}),  # one step, a dict: the closure reads d.get(name)
        ("/f", Element({"f": value})),  # one step, not a plain dict: the path's getter
        ("/g/f", {"g": {"f": value}}),  # two steps: the path's getter
        ("/f[0]", {"f": [value]}),  # an index: the path's getter
    ]


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type (two NaNs are the same result)."""
    both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    return type(a) is type(b) and (a == b or both_nan)


@settings(max_examples=500)
@given(ops, literals, values)
def test_field_compare_agrees_with_compare_any(op: str, lit: Any, value: Any) -> None:
    for text, doc in _resolved_shapes(value):
        path = parse_path(text)
        steps = path.steps
        key = steps[0].name if len(steps) == 1 and steps[0].index is None else None
        fast = field_compare(op, key, path.getter, lit)
        want = compare_any(op, path.resolve(doc), lit)
        if fast is None:  # no fast form for this literal: the compiler takes compare_any
            continue
        assert _same(fast(doc, None), want), (op, lit, text, doc)


@given(ops, literals)
def test_field_compare_has_a_fast_form_for_every_usual_literal(op: str, lit: Any) -> None:
    exact_int = isinstance(lit, int) and -SAFE_INT < lit < SAFE_INT
    usual = isinstance(lit, str) or exact_int or (isinstance(lit, float) and not math.isnan(lit))
    path = parse_path("/f")
    assert (field_compare(op, "f", path.getter, lit) is not None) is usual


field = st.sampled_from(["/a", "/b", "/s", "/a/b", "/arr[1]"]).map(lambda p: Field(parse_path(p)))
lit_nodes = st.one_of(literals.filter(lambda x: x == x), st.none()).map(Literal)
compares = st.one_of(
    st.builds(Compare, ops, field, lit_nodes),
    st.builds(Compare, ops, lit_nodes, field),  # compiled with FLIP
)
#: Text that does not read as a number (an IN list of only these takes the set lookup).
words = st.sampled_from(["a", "b", "ab", "A", "é"]).map(Literal)
in_lists = st.builds(
    InList,
    field,
    st.one_of(
        st.lists(words, min_size=1, max_size=3), st.lists(lit_nodes, min_size=1, max_size=4)
    ).map(tuple),
    st.booleans(),
)
likes = st.builds(
    Like, field, st.sampled_from(["a", "^a", "b$", "1", "(?i)A"]), st.booleans(), st.booleans()
)
predicates: st.SearchStrategy[Node] = st.one_of(compares, in_lists, likes)


def _chain(cls: type[And] | type[Or], operands: list[Node]) -> Node:
    node = operands[0]
    for right in operands[1:]:
        node = cls(node, right)
    return node


def _and_or(operands: list[Node]) -> st.SearchStrategy[Node]:
    return st.sampled_from([_chain(And, operands), _chain(Or, operands)])


#: Chains of two, three and four operands: of predicates only (the two- and three-way
#: closures and the loop), and with any node mixed in (the three-valued loop).
chains = st.one_of(
    predicates,
    st.lists(predicates, min_size=2, max_size=4).flatmap(_and_or),
    st.lists(st.one_of(predicates, nodes), min_size=2, max_size=4).flatmap(_and_or),
)


def _documents(node: Node) -> st.SearchStrategy[dict[str, Any]]:
    """Documents for ``node``: each field it reads is absent or holds a value.

    Values are drawn half the time from the node's own literals, so that ``=``, IN and
    LIKE match as often as they miss.
    """
    own = sorted({repr(n.value): n.value for n in walk(node) if isinstance(n, Literal)}.items())
    value = st.one_of(values, st.sampled_from([v for _, v in own])) if own else values
    paths = sorted({n.path.to_text() for n in walk(node) if isinstance(n, Field)})
    return st.fixed_dictionaries({p: st.one_of(st.just(_ABSENT), value) for p in paths}).map(_place)


_ABSENT = object()


def _place(at: dict[str, Any]) -> dict[str, Any]:
    """The document with ``at[path]`` at each path (``/x``, ``/x/y`` or ``/x[1]``)."""
    doc: dict[str, Any] = {}
    for path, value in at.items():
        if value is _ABSENT:
            continue
        steps = parse_path(path).steps
        name = steps[0].name
        if len(steps) == 2:
            inner = doc.setdefault(name, {})
            if isinstance(inner, dict):
                inner[steps[1].name] = value
        elif steps[0].index is not None:
            doc[name] = ["x"] * steps[0].index + [value]
        else:
            doc.setdefault(name, value)
    return doc


@settings(max_examples=400)
@given(st.data(), chains)
def test_specialised_shapes_agree_with_the_interpreter(data: st.DataObject, node: Node) -> None:
    fn = compile_node(node)
    for doc in data.draw(st.lists(_documents(node), min_size=1, max_size=4)):
        try:
            want = normalize(evaluate(node, doc))
        except RegexTimeoutError:
            return
        got = normalize(fn(doc, None))
        assert _same(got, want), (node, doc)
