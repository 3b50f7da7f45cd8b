"""Entry points of the filter language: parse_filter, compile_filter and Filter.

Imports only ``errors``, ``paths``, ``document``, ``gcpause`` and ``expr`` modules.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from typing import Any

import attrs

from sowlib.errors import FilterSyntaxError
from sowlib.expr import runtime
from sowlib.expr.codegen import Matcher, generate
from sowlib.expr.context import EvalContext
from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.nodes import Call, Field, Node, walk
from sowlib.expr.parser import parse
from sowlib.expr.to_python import Compiled, compile_tree
from sowlib.expr.to_text import to_text
from sowlib.gcpause import paused_gc
from sowlib.paths import FieldPath

__all__ = ["CACHE_SIZE", "WARM_AFTER", "Filter", "clear_cache", "compile_filter", "parse_filter"]

#: Most compiled filters kept by :func:`compile_filter` (least recently used go first).
CACHE_SIZE = 1024


def parse_filter(text: str) -> Node:
    """Parse filter text into its AST.

    Example:
        >>> parse_filter("/a = 1").op
        '='
    Raises:
        FilterSyntaxError: bad syntax or a bad LIKE pattern (shows a caret).
        UnknownFunctionError: an unknown function name.
        FilterArityError: a function called with the wrong number of arguments.
        FilterError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise FilterSyntaxError(repr(text), 0, "filter text (a str)", type(text).__name__)
    return parse(text)


#: Evaluations through :meth:`Filter.matches` before a boolean filter's generated
#: function replaces its closures (generating costs about as much as parsing).
WARM_AFTER = 1000


@attrs.define
class _Lazy:
    """The matcher a :class:`Filter` uses now, and its generated function once made."""

    node: Node
    match: Matcher
    generated: Matcher | None = None

    def fast(self) -> Matcher:
        """The generated function (made on first call) for a boolean node, else ``match``."""
        gen = self.generated
        if gen is None:
            gen = self.generated = self.match = generate(self.node)
        return gen


def _lazy(node: Node, fn: Compiled, boolean: bool) -> _Lazy:
    if not boolean:
        truthy = runtime.truthy

        def match(doc: Any, ctx: EvalContext | None = None) -> bool:
            return truthy(fn(doc, ctx))

        return _Lazy(node, match, match)
    left = WARM_AFTER

    def warming(doc: Any, ctx: EvalContext | None = None) -> bool:
        # a boolean node's closures return exactly True or False, as generate() does
        nonlocal left
        left -= 1
        if left <= 0:
            state.fast()
        result: bool = fn(doc, ctx)
        return result

    state = _Lazy(node, warming)
    return state


@attrs.frozen
class Filter:
    """A compiled filter: parse once, evaluate many times.

    A boolean filter (one that is never NULL) first runs as nested closures;
    after :data:`WARM_AFTER` calls of :meth:`matches`, or as soon as
    :attr:`matcher` is read, it runs as one generated function (see
    :mod:`sowlib.expr.codegen`). Both give the same results.

    Attributes:
        text: the filter as given.
        node: its AST.

    Example:
        >>> f = compile_filter("/price > 100")
        >>> f.matches({"price": 120}), f.matches({"price": "abc"}), f.matches({})
        (True, True, False)
    """

    text: str
    node: Node
    _fn: Compiled = attrs.field(eq=False, repr=False)
    _state: _Lazy = attrs.field(eq=False, repr=False)

    @classmethod
    def from_node(cls, node: Node, text: str | None = None) -> Filter:
        """Compile an AST (``text`` defaults to its canonical text); O(size of the tree)."""
        fn, boolean = compile_tree(node)
        state = _lazy(node, fn, boolean)
        return cls(to_text(node) if text is None else text, node, fn, state)

    def matches(self, doc: Any, ctx: EvalContext | None = None) -> bool:
        """True exactly when the filter evaluates to TRUE for ``doc``; O(size of the filter).

        For a scan, read :attr:`matcher` once instead (no method call, and the
        generated function from the first document).

        Raises:
            RegexTimeoutError: a LIKE pattern ran longer than ``like.REGEX_TIMEOUT``.
        """
        return self._state.match(doc, ctx)

    @property
    def matcher(self) -> Matcher:
        """The fastest ``(doc, ctx=None) -> bool`` function for :meth:`matches` (no method call).

        The first read of a boolean filter generates its function (about the
        cost of parsing it); later reads return the same function.
        """
        return self._state.fast()

    def evaluate(self, doc: Any, ctx: EvalContext | None = None) -> Any:
        """The filter's value for ``doc``: a scalar, a list, or None for NULL."""
        return runtime.normalize(self._fn(doc, ctx))

    def to_text(self) -> str:
        """Canonical text (``parse_filter(f.to_text()) == f.node``)."""
        return to_text(self.node)

    @property
    def fields(self) -> frozenset[FieldPath]:
        """Every field path the filter reads."""
        return frozenset(n.path for n in walk(self.node) if isinstance(n, Field))

    @property
    def deterministic(self) -> bool:
        """False when the filter calls a clock function (forbidden with OOF, spec §5)."""
        return all(FUNCTIONS[n.name].deterministic for n in walk(self.node) if isinstance(n, Call))

    @property
    def uses_context(self) -> bool:
        """True when the filter calls a context function (SOW_KEY(), TOPIC_NAME()...)."""
        return any(FUNCTIONS[n.name].context for n in walk(self.node) if isinstance(n, Call))


_cache: OrderedDict[str, Filter] = OrderedDict()
_lock = Lock()


def _remember(key: str, f: Filter) -> None:
    with _lock:
        _cache[key] = f
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def compile_filter(text: str | Filter) -> Filter:
    """Parse and compile a filter; cached by its text (LRU of :data:`CACHE_SIZE`).

    Uncached: O(len(text)), no code generation (see :class:`Filter`); cached: one
    dict lookup.

    A :class:`Filter` is returned as is.

    Raises:
        FilterSyntaxError, UnknownFunctionError, FilterArityError: see :func:`parse_filter`.
        FilterError: ``text`` is neither a str nor a Filter.
    """
    if isinstance(text, Filter):
        return text
    if not isinstance(text, str):
        raise FilterSyntaxError(repr(text), 0, "filter text (a str)", type(text).__name__)
    hit = _cache.get(text)
    if hit is not None:
        with _lock:
            if text in _cache:
                _cache.move_to_end(text)
        return hit
    # Compiling allocates about a thousand tokens, nodes and closures: the cyclic GC
    # would scan them once or twice per filter (~15% of the time, measured) although
    # nothing built here is garbage yet; the tokens are freed before the next pass.
    with paused_gc():
        f = Filter.from_node(parse(text), text)
    _remember(text, f)
    return f


def clear_cache() -> None:
    """Forget every cached filter (tests, or after changing ``like.REGEX_TIMEOUT``)."""
    with _lock:
        _cache.clear()
