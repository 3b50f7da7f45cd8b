"""Entry points of the filter language: parse_filter, compile_filter and Filter.

Imports only ``errors``, ``paths``, ``document``, ``gcpause`` and ``expr`` modules.
"""

from __future__ import annotations

import types
from collections import OrderedDict
from collections.abc import Callable
from threading import Lock
from typing import Any

import attrs

from sowlib.errors import FilterSyntaxError
from sowlib.expr import runtime
from sowlib.expr.context import EvalContext
from sowlib.expr.functions import FUNCTIONS
from sowlib.expr.nodes import Call, Field, Like, Node, walk
from sowlib.expr.parser import parse
from sowlib.expr.shape import Equality, equality_shape
from sowlib.expr.to_python import Compiled, compile_tree
from sowlib.expr.to_text import to_text
from sowlib.gcpause import paused_gc
from sowlib.paths import FieldPath

__all__ = [
    "CACHE_BYTES",
    "CACHE_SIZE",
    "Filter",
    "Matcher",
    "cache_bytes",
    "cached_texts",
    "clear_cache",
    "compile_filter",
    "filter_cost",
    "parse_filter",
]

#: Most compiled filters kept by :func:`compile_filter` (least recently used go first).
CACHE_SIZE = 1024
#: Most memory, in approximate bytes (see :func:`filter_cost`), that the compiled
#: filters kept by :func:`compile_filter` may hold; least recently used go first.
CACHE_BYTES = 64 * 1024 * 1024

Matcher = Callable[..., bool]

#: The functions that run a regex (a LIKE is the other way a filter runs one).
_REGEX_FUNCTIONS = frozenset(("REGEXP_REPLACE",))


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


def _matcher(fn: Compiled, boolean: bool) -> Matcher:
    """``(doc, ctx=None) -> bool`` for a compiled tree."""
    if not boolean:
        truthy = runtime.truthy

        def match(doc: Any, ctx: EvalContext | None = None) -> bool:
            return truthy(fn(doc, ctx))

        return match
    # A boolean tree's closure returns exactly True or False: it is the matcher itself.
    # Each compile makes a fresh top closure, so giving it ``ctx=None`` as a default
    # is local to this filter and spares a wrapper call per document.
    if isinstance(fn, types.FunctionType) and fn.__code__.co_argcount == 2:
        fn.__defaults__ = (None,)
        return fn
    return lambda doc, ctx=None: fn(doc, ctx) is True


@attrs.frozen
class Filter:
    """A compiled filter: parse once, evaluate many times.

    A filter runs as nested Python closures built from its AST; no source
    code is generated, so neither field names nor literals can ever become code.

    Filters are equal (and hash) by their text, which determines the AST: a
    comparison or a hash never walks a long tree.

    Attributes:
        text: the filter as given.
        node: its AST.

    Example:
        >>> f = compile_filter("/price > 100")
        >>> f.matches({"price": 120}), f.matches({"price": "abc"}), f.matches({})
        (True, True, False)
    """

    text: str
    # the text determines the node; eq, hash and repr on the node would recurse once per
    # clause of a long AND/OR chain
    node: Node = attrs.field(eq=False, repr=False)
    _fn: Compiled = attrs.field(eq=False, repr=False)
    _match: Matcher = attrs.field(eq=False, repr=False)
    #: Whether evaluating the filter may run a regex (a LIKE, a REGEXP_REPLACE): only
    #: such a filter needs a query's regex budget (:func:`~sowlib.expr.regex_budget`).
    regex: bool = attrs.field(init=False, eq=False, repr=False)

    #: ``(path, literals)`` when the filter is one equality of a field and literals
    #: (``/f = 'x'``, ``/f IN (1, 2)``), else None: read once, when compiled, for the
    #: query planner (:func:`~sowlib.expr.shape.equality_shape`).
    equality: Equality | None = attrs.field(init=False, eq=False, repr=False)

    @equality.default
    def _equality(self) -> Equality | None:
        return equality_shape(self.node)

    @regex.default
    def _uses_regex(self) -> bool:
        return any(
            isinstance(n, Like) or (isinstance(n, Call) and n.name in _REGEX_FUNCTIONS)
            for n in walk(self.node)
        )

    @classmethod
    def from_node(cls, node: Node, text: str | None = None) -> Filter:
        """Compile an AST (``text`` defaults to its canonical text); O(size of the tree)."""
        fn, boolean = compile_tree(node)
        return cls(to_text(node) if text is None else text, node, fn, _matcher(fn, boolean))

    def __reduce__(self) -> tuple[Any, ...]:
        # The compiled closures do not pickle (and would recurse once per clause of a
        # long chain): a Filter pickles as its text and AST and compiles again on load.
        return (_load_filter, (self.text, self.node))

    def matches(self, doc: Any, ctx: EvalContext | None = None) -> bool:
        """True exactly when the filter evaluates to TRUE for ``doc``; O(size of the filter).

        For a scan, read :attr:`matcher` once instead (no method call).

        Raises:
            RegexTimeoutError: a LIKE pattern ran longer than ``like.REGEX_TIMEOUT``,
                or a query's LIKE patterns spent their budget (see :func:`like.regex_budget`).
        """
        return self._match(doc, ctx)

    @property
    def matcher(self) -> Matcher:
        """The fastest ``(doc, ctx=None) -> bool`` function for :meth:`matches` (no method call).

        The same function on every read.
        """
        return self._match

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


def _load_filter(text: str, node: Node) -> Filter:
    """An unpickled :class:`Filter`: ``node`` compiled again, under its original text."""
    with paused_gc():
        return Filter.from_node(node, text)


def filter_cost(text: str) -> int:
    """Approximate bytes a compiled filter holds, for the cache bound: O(1).

    A compiled filter (its tokens are freed; its nodes, closures, IN-list sets
    and text are kept) measured at 35-200 bytes per character of filter text,
    most for short filters, least for long IN-lists: this charges the most,
    plus a fixed part for the objects every filter has.
    """
    return 2048 + 200 * len(text)


_cache: OrderedDict[str, tuple[Filter, int]] = OrderedDict()
_lock = Lock()
_bytes = 0


def _remember(key: str, f: Filter) -> None:
    global _bytes
    cost = filter_cost(key)
    if cost > CACHE_BYTES:
        return  # larger than the whole cache: compiled for this caller only
    with _lock:
        old = _cache.pop(key, None)
        if old is not None:
            _bytes -= old[1]
        _cache[key] = (f, cost)
        _bytes += cost
        while len(_cache) > CACHE_SIZE or _bytes > CACHE_BYTES:
            _bytes -= _cache.popitem(last=False)[1][1]


def cache_bytes() -> int:
    """Approximate bytes (:func:`filter_cost`) the cached filters hold now."""
    return _bytes


def cached_texts() -> list[str]:
    """The texts of the cached filters, least recently used first."""
    return list(_cache)


def compile_filter(text: str | Filter) -> Filter:
    """Parse and compile a filter; cached by its text.

    The cache keeps the most recently used filters, at most :data:`CACHE_SIZE` of
    them and at most :data:`CACHE_BYTES` approximate bytes (:func:`filter_cost`):
    a few huge IN-lists cannot pin the memory of a thousand. Uncached:
    O(len(text)); cached: one dict lookup.

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
        return hit[0]
    # Compiling allocates about a thousand tokens, nodes and closures: the cyclic GC
    # would scan them once or twice per filter although nothing built here is garbage
    # yet; the tokens are freed before the next pass.
    with paused_gc():
        f = Filter.from_node(parse(text), text)
    _remember(text, f)
    return f


def clear_cache() -> None:
    """Forget every cached filter (tests, or after changing ``like.REGEX_TIMEOUT``)."""
    global _bytes
    with _lock:
        _cache.clear()
        _bytes = 0
