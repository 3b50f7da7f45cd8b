"""Queries: records, result-set controls and the query pipeline (spec §13, §18.3).

``run_query`` = candidates (``sow_keys`` / planner) -> filter -> order -> skip
-> top -> select. Must not import ``storage``, ``topic``, ``store`` or ``spark``.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Protocol

import attrs

from sowlib import display, frames, projection
from sowlib.errors import FieldPathError, QueryOptionError
from sowlib.expr import runtime
from sowlib.index.planner import FilterLike, Plan, plan
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.paths import FieldPath, parse_path
from sowlib.record import Record

__all__ = [
    "MAX_BATCH_SIZE",
    "OrderBy",
    "OrderKey",
    "QueryFilter",
    "QueryOptions",
    "QuerySource",
    "Record",
    "ResultSet",
    "SelectList",
    "explain",
    "run_query",
]

#: The largest batch size AMPS accepts (spec §13.2).
MAX_BATCH_SIZE = 10_000


class QueryFilter(FilterLike, Protocol):
    """What the pipeline needs from a compiled filter (``sowlib.expr.Filter``)."""

    @property
    def uses_context(self) -> bool: ...

    def matches(self, doc: Any, ctx: Any = None) -> bool: ...


# ----------------------------------------------------------------------------
# ordering


class _Rev:
    """Inverts the order of a sort component (for DESC keys inside one tuple)."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Rev) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rev) and bool(self.v == other.v)

    __hash__ = None  # type: ignore[assignment]


_NULL = (1,)  # sorts after every (0, key): NULL last ascending, first descending
_ORDER_TERM = re.compile(r"\s*(\[[^\]]*\]|[^\s,]+)((?:\s+[A-Za-z]+)*)\s*(?:,|\Z)")


@attrs.frozen
class OrderKey:
    """One ``identifier [ASC|DESC] [TEXT]`` term of an OrderBy."""

    path: FieldPath
    descending: bool = False
    text: bool = False

    def plain(self, doc: Any) -> Any:
        """This term's ascending sort component for ``doc`` (NULL last, spec §13.3 [R]).

        Native tuples only, so sorts compare them in C; a DESC term sorts on
        the same component with ``reverse=True``.
        """
        value = self.path.getter(doc)
        kind = type(value)
        if self.text:
            if kind is str and value:
                return (0, value)
            text = runtime.text_of(value)
            return _NULL if text is None else (0, text)
        if (kind is int or kind is float) and value == value:
            return (0, (0, value, ""))
        return _NULL if runtime.first(value) is None else (0, runtime.order_key(value))

    def component(self, doc: Any) -> Any:
        """This term's sort component for ``doc`` (NULL placed per spec §13.3 [R])."""
        comp = self.plain(doc)
        return _Rev(comp) if self.descending else comp

    def to_text(self) -> str:
        """``/a DESC TEXT``."""
        out = self.path.to_text() + (" DESC" if self.descending else " ASC")
        return out + (" TEXT" if self.text else "")


@attrs.frozen
class OrderBy:
    """A parsed OrderBy (spec §13.3): ``/region ASC, /total DESC, /code DESC TEXT``.

    Mixed-type order: numbers (and strings that convert) numerically, then NaN,
    then other strings byte-wise; NULL/missing last ascending, first
    descending; arrays sort by their first element; ties by SOW key ascending.

    Example:
        >>> [k.to_text() for k in OrderBy.parse("/a, /b desc text").keys]
        ['/a ASC', '/b DESC TEXT']
    """

    keys: tuple[OrderKey, ...]

    @classmethod
    def parse(cls, text: str) -> OrderBy:
        """Parse ``key [ASC|DESC] [TEXT], ...``.

        Raises:
            QueryOptionError: empty text, a bad field path or an unknown modifier.
        """
        if not isinstance(text, str) or not text.strip():
            raise QueryOptionError("order_by", text, "expected '/field [ASC|DESC] [TEXT], ...'")
        keys: list[OrderKey] = []
        pos = 0
        while pos < len(text):
            m = _ORDER_TERM.match(text, pos)
            if m is None or m.end() == pos:
                raise QueryOptionError(
                    "order_by", text, f"cannot read a sort key at column {pos + 1}"
                )
            try:
                path = parse_path(m.group(1))
            except FieldPathError as exc:
                raise QueryOptionError("order_by", text, str(exc)) from None
            words = [w.upper() for w in m.group(2).split()]
            desc = text_mode = False
            if words and words[0] in ("ASC", "DESC"):
                desc = words.pop(0) == "DESC"
            if words and words[0] == "TEXT":
                text_mode = bool(words.pop(0))
            if words and words[0] in ("ASC", "DESC") and text_mode:
                desc = words.pop(0) == "DESC"  # "/x TEXT DESC" is accepted too
            if words:
                raise QueryOptionError("order_by", text, f"unknown modifier {words[0]!r}")
            keys.append(OrderKey(path, desc, text_mode))
            pos = m.end()
            if text[m.end() - 1 : m.end()] == "," and not text[pos:].strip():
                raise QueryOptionError("order_by", text, "trailing comma")
        return cls(tuple(keys))

    def sort_key(self, doc: Any, sow_key: str) -> tuple[Any, ...]:
        """A key whose ascending order is this OrderBy's order; SOW key breaks ties."""
        return (*(k.component(doc) for k in self.keys), sow_key)

    def to_text(self) -> str:
        """Canonical text, e.g. ``/a ASC, /b DESC TEXT``."""
        return ", ".join(k.to_text() for k in self.keys)


# ----------------------------------------------------------------------------
# select lists

_DROP = object()


@attrs.frozen
class SelectList:
    """A select list (spec §13.5): ``[-/,+/id,+/bag/top]``.

    The most specific directive wins, the first of two identical directives
    counts, a field no directive covers is included, and absent fields are
    never invented.
    """

    directives: tuple[tuple[tuple[str, ...], bool], ...]

    @classmethod
    def parse(cls, text: str) -> SelectList:
        """Parse ``[+/path, -/path, ...]`` (the brackets are optional).

        Raises:
            QueryOptionError: a directive lacks ``+``/``-`` or has a bad path.
        """
        if not isinstance(text, str):
            raise QueryOptionError("select", text, "expected text such as '[+/a,-/b]'")
        body = text.strip()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1]
        seen: dict[tuple[str, ...], bool] = {}
        for raw in body.split(","):
            item = raw.strip()
            if len(item) < 2 or item[0] not in "+-" or item[1] != "/":
                raise QueryOptionError("select", text, f"{item!r} is not '+/path' or '-/path'")
            names: tuple[str, ...] = ()
            if item[1:] != "/":
                try:
                    path = parse_path(item[1:])
                except FieldPathError as exc:
                    raise QueryOptionError("select", text, str(exc)) from None
                if any(step.index is not None for step in path.steps):
                    raise QueryOptionError("select", text, "select paths cannot index arrays")
                names = path.names
            seen.setdefault(names, item[0] == "+")
        return cls(tuple(seen.items()))

    def _include(self, path: tuple[str, ...]) -> bool:
        best, keep = -1, True
        for names, plus in self.directives:
            if len(names) > best and path[: len(names)] == names:
                best, keep = len(names), plus
        return keep

    def _below(self, path: tuple[str, ...]) -> bool:
        n = len(path)
        return any(len(names) > n and names[:n] == path for names, _ in self.directives)

    def _project(self, value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, dict) and self._below(path):
            out = type(value)() if type(value) is dict else {}
            for name, child in value.items():
                got = self._project(child, (*path, name))
                if got is not _DROP:
                    out[name] = got
            return out if out or self._include(path) else _DROP
        if isinstance(value, list) and self._below(path):
            items = [self._project(v, path) for v in value]
            kept = [v for v in items if v is not _DROP]
            return kept if kept or self._include(path) else _DROP
        return value if self._include(path) else _DROP

    def apply(self, doc: Any) -> Any:
        """The projection of ``doc``; ``doc`` itself is not modified; O(size of doc).

        Example:
            >>> SelectList.parse("[-/,+/id]").apply({"id": 5, "who": "Kim"})
            {'id': 5}
        """
        got = self._project(doc, ())
        return {} if got is _DROP else got

    def to_text(self) -> str:
        """Canonical text, e.g. ``[-/,+/id]``."""
        return (
            "["
            + ",".join(("+" if p else "-") + "/" + "/".join(n) for n, p in self.directives)
            + "]"
        )


# ----------------------------------------------------------------------------
# options


def _count(option: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise QueryOptionError(option, value, "expected a non-negative integer")
    return value


@attrs.frozen
class QueryOptions:
    """Validated result-set controls (spec §13.2-§13.5); build with :meth:`make`."""

    order_by: OrderBy | None = None
    top_n: int | None = None
    skip_n: int | None = None
    select: SelectList | None = None
    batch_size: int = 10

    @classmethod
    def make(
        cls,
        *,
        order_by: str | None = None,
        top_n: int | None = None,
        skip_n: int | None = None,
        select: str | None = None,
        batch_size: int = 10,
    ) -> QueryOptions:
        """Parse and validate options.

        ``skip_n`` requires ``top_n``; without ``order_by`` a paged query is
        ordered by SOW key so pages are stable.

        Raises:
            QueryOptionError: a value is invalid (negative, wrong type, bad text).
        """
        top = _count("top_n", top_n)
        skip = _count("skip_n", skip_n)
        if skip is not None and top is None:
            raise QueryOptionError("skip_n", skip_n, "skip_n requires top_n")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise QueryOptionError("batch_size", batch_size, "expected an integer")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise QueryOptionError("batch_size", batch_size, f"expected 1..{MAX_BATCH_SIZE}")
        return cls(
            order_by=None if order_by is None else OrderBy.parse(order_by),
            top_n=top,
            skip_n=skip,
            select=None if select is None else SelectList.parse(select),
            batch_size=batch_size,
        )


_NO_OPTIONS = QueryOptions()

# ----------------------------------------------------------------------------
# results


class ResultSet(list[Record]):
    """A list of :class:`Record` with helpers for batches and data frames."""

    def to_list(self) -> list[Record]:
        """A plain list copy."""
        return list(self)

    def batches(self, size: int = 10) -> Iterator[list[Record]]:
        """Consecutive slices of at most ``size`` records (spec §13.2)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise QueryOptionError("batch_size", size, "expected a positive integer")
        for start in range(0, len(self), size):
            yield self[start : start + size]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per record: ``sow_key``, ``seq``, ``timestamp``, ``expiration``,
        ``topic`` and each top-level document field under its path (``/price``)."""
        out = []
        for rec in self:
            row: dict[str, Any] = {
                "sow_key": rec.sow_key,
                "seq": rec.seq,
                "timestamp": rec.timestamp,
                "expiration": rec.expiration,
                "topic": rec.topic,
            }
            if isinstance(rec.doc, dict):
                row.update((f"/{name}", value) for name, value in rec.doc.items())
            else:
                row["data"] = rec.data
            out.append(row)
        return out

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame``: columns by field (``leg.venue``), ``sow_key``, ``seq``
        and UTC datetimes ``timestamp``/``expiration`` (:func:`sowlib.frames.to_pandas`)."""
        return frames.to_pandas(self)

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` with the columns of :meth:`to_pandas`."""
        return frames.to_arrow(self)

    def project(self, expression: str) -> list[Any]:
        """Each document through a JMESPath ``expression``, e.g. ``"{id: orderId}"``.

        Raises:
            QueryOptionError: a bad expression (:mod:`sowlib.projection`).
        """
        return projection.project((rec.doc for rec in self), expression)

    def _repr_html_(self) -> str:
        return display.results_html(self)


# ----------------------------------------------------------------------------
# the pipeline

# The walk pays off when the plan would otherwise hand over many more records
# than the page needs.
_WALK_RATIO = 8


def _matching(
    source: QuerySource,
    flt: QueryFilter | None,
    keys: Iterable[Key] | None,
    unsure: Collection[Key] | None = None,
    limit: int | None = None,
) -> list[Key]:
    """The keys in ``keys`` (None: a full scan) whose document matches ``flt``, in order;
    at most ``limit``. With ``unsure`` (an exact plan) only those keys are tested and
    the others pass untouched. Documents stream from the source and are dropped.
    """
    if flt is None or (unsure is not None and not unsure):
        keys = source.keys() if keys is None else keys
        return list(keys if limit is None else itertools.islice(keys, limit))
    matches = flt.matches
    if unsure is not None:
        keys = list(source.keys() if keys is None else keys)
        sure = [k for k in keys if k not in unsure]
        if limit is not None and len(sure) >= limit:
            return sure[:limit]
        check = [k for k in keys if k in unsure]
        if flt.uses_context:
            context = source.context
            tested = {k for k, d in source.docs(check) if matches(d, context(k))}
        else:
            tested = {k for k, d in source.docs(check) if matches(d)}
        found_keys = [k for k in keys if k not in unsure or k in tested]
        return found_keys if limit is None else found_keys[:limit]
    pairs = source.scan() if keys is None else source.docs(keys)
    found: Iterable[Key]
    if flt.uses_context:
        context = source.context
        found = (k for k, d in pairs if matches(d, context(k)))
    elif limit is None:
        return [k for k, d in pairs if matches(d)]
    else:
        found = (k for k, d in pairs if matches(d))
    return list(found if limit is None else itertools.islice(found, limit))


def _candidates(
    source: QuerySource, flt: QueryFilter | None, found: Plan, limit: int | None = None
) -> list[Key]:
    cands = found.candidates()
    return _matching(source, flt, cands, found.unsure() if found.exact else None, limit)


def _walk(
    source: QuerySource, flt: QueryFilter | None, found: Plan, order: OrderBy, need: int
) -> list[Key] | None:
    """Matches in memo order until ``need`` are found (whole tie groups), or None.

    Only used when the first sort key has a memo index holding one scalar per
    record; the caller still sorts what this returns, so only group order matters.
    """
    first = order.keys[0]
    memo = source.indexes.memo(first.path)
    if first.text or memo is None or not memo.orderable():
        return None
    if found.kind not in ("scan", "memo") or found.estimated <= need * _WALK_RATIO:
        return None
    allowed = found.candidates()
    allowed = None if allowed is None else set(allowed)
    out: list[Key] = []
    for group in memo.groups(descending=first.descending):
        keys = group if allowed is None else [k for k in group if k in allowed]
        out.extend(_matching(source, flt, keys))
        if len(out) >= need:
            break
    return out


def _ordered(source: QuerySource, keys: list[Key], order: OrderBy, need: int | None) -> list[Key]:
    """``keys`` in ``order`` (ties by SOW key ascending), the first ``need`` of them.

    Sorts on native component tuples: by SOW key first, then one stable sort
    per run of same-direction terms, last run first (``reverse=True`` for DESC
    keeps ties in key order). With ``need`` only the records whose first term
    is at least as good as the ``need``-th best are sorted.
    Complexity: O(m log m) for m keys, O(m log need) when few tie at the cut.
    """
    docs = dict(source.docs(keys))
    keys = [k for k in keys if k in docs]
    first = order.keys[0]
    if need is not None and need < len(keys):
        plain = first.plain
        comps = {k: plain(d) for k, d in docs.items()}
        if first.descending:
            cut = heapq.nlargest(need, comps.values())[-1]
            keys = [k for k, c in comps.items() if c >= cut]
        else:
            cut = heapq.nsmallest(need, comps.values())[-1]
            keys = [k for k, c in comps.items() if c <= cut]
    keys = sorted(keys, key=str)  # SOW key text order (content keys are ints)
    runs = [(d, list(t)) for d, t in itertools.groupby(order.keys, lambda t: t.descending)]
    for descending, terms in reversed(runs):
        if len(terms) == 1:
            plain = terms[0].plain
            keys.sort(key=lambda k: plain(docs[k]), reverse=descending)
        else:
            getters = [t.plain for t in terms]
            keys.sort(key=lambda k: tuple(g(docs[k]) for g in getters), reverse=descending)
    return keys if need is None else keys[:need]


def _results(source: QuerySource, keys: Iterable[Key], select: SelectList | None) -> ResultSet:
    """The live records of ``keys``, projected by ``select``; O(1) per key."""
    record = source.record
    if select is None:
        many = getattr(source, "records_of", None)
        if many is not None:
            return ResultSet(many(keys))
        return ResultSet([rec for k in keys if (rec := record(k)) is not None])
    out = ResultSet()
    encode, apply = source.encode, select.apply
    for key in keys:
        rec = record(key)
        if rec is not None:
            projected = apply(rec.doc)
            out.append(rec._replace(data=encode(projected), doc=projected))
    return out


def run_query(
    source: QuerySource,
    flt: QueryFilter | None,
    options: QueryOptions | None = None,
    sow_keys: Sequence[Key] | None = None,
) -> ResultSet:
    """Run a SOW query: candidates -> filter -> order -> skip -> top -> select (spec §18.3).

    Returns exactly what a full scan would: indexes only narrow the candidates
    and the full filter runs on each (exact plans skip it where the index
    already decided). ``top_n`` with ``order_by`` sorts only the records that
    can reach the page, or walks a memo index of the first sort field in order
    and stops early.

    Args:
        source: the topic.
        flt: compiled filter; None selects every record.
        options: result-set controls (default: none).
        sow_keys: restrict the query to these SOW keys.
    Returns:
        A :class:`ResultSet` of :class:`Record`.
    Complexity: O(c) filter evaluations for c candidates, plus O(m log m)
    ordering of m matches (O(m log k) with a page of k).
    """
    options = options or _NO_OPTIONS
    found = plan(source, flt, sow_keys)
    top, skip = options.top_n, options.skip_n or 0
    order = options.order_by
    if top is not None and top == 0:
        return ResultSet()
    if order is None and not skip:
        return _results(source, _candidates(source, flt, found, top), options.select)
    need = None if top is None else skip + top
    keys = None if need is None or order is None else _walk(source, flt, found, order, need)
    if keys is None:
        keys = _candidates(source, flt, found)
    if order is None:
        keys.sort(key=str)
        keys = keys[skip:] if need is None else keys[skip:need]
    else:
        keys = _ordered(source, keys, order, need)[skip:]
    return _results(source, keys, options.select)


def explain(
    source: QuerySource, flt: QueryFilter | None, sow_keys: Sequence[Key] | None = None
) -> Plan:
    """The plan :func:`run_query` would use (builds memo indexes it needs, as a query would).

    Example:
        >>> explain(topic, compile_filter("/region = 'EU'")).describe()  # doctest: +SKIP
        "hash hash(/region) [/region = 'EU'] ~120 candidates"
    """
    return plan(source, flt, sow_keys)
