"""The query pipeline (spec §13, §18.3): ``run_query`` = candidates (``sow_keys`` /
planner) -> filter -> order -> skip -> top -> select, and ``explain``.

Imports ``index`` (the planner and the ``QuerySource`` protocol) and the sibling
modules; never ``storage``, ``topic``, ``store`` or ``spark``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable, Sequence
from math import isnan
from typing import Any, Protocol

from sowlib.index.planner import FilterLike, Plan, plan
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.query.options import DEFAULT_OPTIONS, QueryOptions
from sowlib.query.order import OrderBy, OrderKey
from sowlib.query.resultset import ResultSet
from sowlib.query.select import SelectList
from sowlib.record import Record

__all__ = [
    "WALK_RATIO",
    "QueryFilter",
    "explain",
    "live_rows",
    "read_rows",
    "run_query",
    "top_rows",
]


class QueryFilter(FilterLike, Protocol):
    """What the pipeline needs from a compiled filter (``sowlib.expr.Filter``)."""

    @property
    def uses_context(self) -> bool: ...

    @property
    def text(self) -> str: ...

    def matches(self, doc: Any, ctx: Any = None) -> bool: ...


#: An ordered page walks the memo index of its first sort key when the plan would
#: otherwise hand over more than this many times the records the page needs.
WALK_RATIO = 8


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


#: Plan kinds kept per source and filter text: what they choose depends only on the
#: filter and the hash indexes there are (which of several hash indexes serves, by their
#: estimates, may go stale; any of them gives the same rows).
_KEPT_KINDS = frozenset(("hash", "hash_in_first"))
#: Filters whose plan a source keeps at most (all are forgotten past it).
_KEPT_PLANS = 256


def _plan(source: QuerySource, flt: QueryFilter | None, sow_keys: Sequence[Key] | None) -> Plan:
    """:func:`plan`, kept in the source's ``plans`` (a dict, where it has one) for the
    kinds in :data:`_KEPT_KINDS` while its hash indexes are the same objects."""
    kept: dict[str, tuple[tuple[int, ...], Plan]] | None = getattr(source, "plans", None)
    if kept is None or flt is None or sow_keys is not None:
        return plan(source, flt, sow_keys)
    # the ids of live objects: a kept plan holds its index, so no id is reused meanwhile
    layout = tuple(map(id, source.indexes.hashes))
    text: str = flt.text
    got = kept.get(text)
    if got is not None and got[0] == layout:
        return got[1]
    found = plan(source, flt, sow_keys)
    if found.kind in _KEPT_KINDS:
        if len(kept) >= _KEPT_PLANS:
            kept.clear()
        kept[text] = (layout, found)
    return found


def _candidates(
    source: QuerySource, flt: QueryFilter | None, found: Plan, limit: int | None = None
) -> list[Key]:
    cands = found.candidates()
    return _matching(source, flt, cands, found.unsure() if found.exact else None, limit)


def _candidate_rows(
    source: QuerySource, flt: QueryFilter | None, found: Plan, limit: int | None
) -> list[Record]:
    """The records of :func:`_candidates`, in its order. The candidates an exact plan
    hands over whole (nothing unsure, no limit) are read as they are, with no copy made
    first (an index gives each query keys of its own, a saved key set included: that
    one is read off its positions)."""
    cands = found.candidates()
    unsure = found.unsure() if found.exact else None
    if cands is not None and limit is None and unsure is not None and not unsure:
        return read_rows(source, cands)
    return read_rows(source, _matching(source, flt, cands, unsure, limit))


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
    if found.kind not in ("scan", "memo") or found.estimated <= need * WALK_RATIO:
        return None
    allowed = found.candidates()
    allowed = None if allowed is None else set(allowed)
    out: list[Key] = []
    for group in memo.groups(descending=first.descending):
        keys = group if allowed is None else [k for k in group if k in allowed]
        out.extend(keys if flt is None else _matching(source, flt, keys))
        if len(out) >= need:
            break
    return out


def top_rows(source: QuerySource, order: OrderBy, need: int) -> list[Record] | None:
    """The first ``need`` records of every record in ``order``, or None where this fast
    path does not serve (:func:`_ordered` of all keys is its reference).

    Serves one term that is not TEXT over a memo index whose :meth:`top_keys` promises
    exact tie groups: only those records are read, the keys of each group of several in
    SOW key order (the tie-break: a key's text is ``str(key)``). O(log n + need), O(need)
    while the index's numbers are unchanged (it keeps its last answer).
    """
    if len(order.keys) != 1:
        return None
    term = order.keys[0]
    memo = None if term.text else source.indexes.memo(term.path)
    keys = None if memo is None else memo.top_keys(need, term.descending)
    if keys is None:
        return None
    rows = read_rows(source, keys)
    if len(rows) != len(keys):
        return None  # a key the index holds is not live: leave it to the reference
    return rows if len(rows) <= need else rows[:need]


#: Rows whose documents are decoded at once to compute their sort components.
_SORT_CHUNK = 2048
#: An ordered page first drops the rows that cannot reach it when there are more than
#: this many times the rows it needs (below, one sort of them all is as cheap).
_CUT_RATIO = 4
#: Value types whose sort component orders and ties as the value itself.
_NUMBER_TYPES = frozenset((int, float))


def read_rows(source: QuerySource, keys: Iterable[Key]) -> list[Record]:
    """The live records of ``keys``, in order (absent keys left out); one batch read."""
    many = getattr(source, "records_of", None)
    if many is not None:
        return many(keys)  # type: ignore[no-any-return]
    record = source.record
    return [rec for k in keys if (rec := record(k)) is not None]


def _plain_column(term: OrderKey, got: list[Any]) -> list[Any]:
    """``term.plain_value`` of each of ``got``, or, when every value is a true number
    (an int or a float, no NaN, no bool), the values themselves: among such values both
    order and tie alike, and the column is sorted on without a call per value."""
    if not term.text and _NUMBER_TYPES.issuperset(map(type, got)) and not any(map(isnan, got)):
        return got
    return list(map(term.plain_value, got))


def _components(
    source: QuerySource, rows: list[Record], order: OrderBy, keys: list[Key] | None = None
) -> list[list[Any]]:
    """Each sort term's component for each row (a column per term).

    With ``keys`` (the rows' keys, one a row), the values the source keeps per key
    (``kept_columns``: an indexed path's) where it keeps them all; else they are read a
    batch at a time through the source's ``field_columns`` (which may read top-level
    fields without decoding the documents), else from each row's document; the rows
    keep their documents undecoded.
    """
    paths = [term.path for term in order.keys]
    kept_of = getattr(source, "kept_columns", None)
    if keys is not None and kept_of is not None:
        kept = kept_of(keys, paths)
        if kept is not None:
            return [_plain_column(t, got) for t, got in zip(order.keys, kept, strict=True)]
    columns_of = getattr(source, "field_columns", None)
    if len(rows) <= _SORT_CHUNK:
        if columns_of is not None:
            values = columns_of([r[1] for r in rows], paths)
        else:
            docs = [r.doc for r in rows]
            values = [list(map(path.getter, docs)) for path in paths]
        return [_plain_column(t, got) for t, got in zip(order.keys, values, strict=True)]
    columns: list[list[Any]] = [[] for _ in order.keys]
    for lo in range(0, len(rows), _SORT_CHUNK):
        chunk = rows[lo : lo + _SORT_CHUNK]
        if columns_of is not None:
            values = columns_of([r[1] for r in chunk], paths)
        else:
            docs = [r.doc for r in chunk]
            values = [list(map(path.getter, docs)) for path in paths]
        for column, term, got in zip(columns, order.keys, values, strict=True):
            column.extend(_plain_column(term, got))
    return columns


def _ordered(
    source: QuerySource, keys: list[Key], order: OrderBy, need: int | None
) -> list[Record]:
    """The records of ``keys`` in ``order`` (ties by SOW key ascending), the first ``need``.

    Each record is read once and its document decoded once, for the sort components.
    Sorts positions on native component tuples: by SOW key first, then one stable sort
    per run of same-direction terms, last run first (``reverse=True`` for DESC keeps
    ties in key order). With ``need`` only the records whose first term is at least as
    good as the ``need``-th best are sorted (when that leaves out many).
    Complexity: O(m log m) for m keys, O(m log need) when few tie at the cut.
    """
    rows = read_rows(source, keys)
    columns = _components(source, rows, order, keys if len(rows) == len(keys) else None)
    first = columns[0]
    texts = [r[0] for r in rows]
    at: list[int] = list(range(len(rows)))
    if need is not None and need * _CUT_RATIO < len(rows):
        if order.keys[0].descending:
            cut = heapq.nlargest(need, first)[-1]
            at = [i for i in at if first[i] >= cut]
        else:
            cut = heapq.nsmallest(need, first)[-1]
            at = [i for i in at if first[i] <= cut]
    at.sort(key=texts.__getitem__)  # SOW key text order
    if len(order.keys) == 1:
        at.sort(key=first.__getitem__, reverse=order.keys[0].descending)
    else:
        term_columns = list(zip(order.keys, columns, strict=True))
        runs = [(d, list(t)) for d, t in itertools.groupby(term_columns, lambda t: t[0].descending)]
        for descending, terms in reversed(runs):
            if len(terms) == 1:
                at.sort(key=terms[0][1].__getitem__, reverse=descending)
            else:
                cols = [c for _t, c in terms]
                at.sort(key=lambda i: tuple(c[i] for c in cols), reverse=descending)
    return [rows[i] for i in (at if need is None else at[:need])]


def _results(source: QuerySource, rows: list[Record], select: SelectList | None) -> ResultSet:
    """``rows`` projected by ``select``; O(1) per row."""
    if select is None:
        return ResultSet(rows)
    out = ResultSet()
    encode, apply = source.encode, select.apply
    for rec in rows:
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
    options = options or DEFAULT_OPTIONS
    top, skip = options.top_n, options.skip_n or 0
    order = options.order_by
    if top is not None and top == 0:
        return ResultSet()
    if flt is None and sow_keys is None and order is not None and top is not None:
        rows = top_rows(source, order, skip + top)
        if rows is not None:
            return _results(source, rows[skip:], options.select)
    found = _plan(source, flt, sow_keys)
    if order is None and not skip:
        return _results(source, _candidate_rows(source, flt, found, top), options.select)
    need = None if top is None else skip + top
    keys = None if need is None or order is None else _walk(source, flt, found, order, need)
    if keys is None:
        keys = _candidates(source, flt, found)
    if order is None:
        keys.sort(key=str)
        rows = read_rows(source, keys[skip:] if need is None else keys[skip:need])
    else:
        rows = _ordered(source, keys, order, need)[skip:]
    return _results(source, rows, options.select)


def live_rows(source: QuerySource, keys: list[Key], options: QueryOptions) -> ResultSet:
    """What :func:`run_query` gives for ``sow_keys=keys`` with no filter and no order or
    skip, for keys the caller knows are live (the first ``top_n`` keys it listed): their
    records read in one batch, ``options.select`` applied; O(len(keys))."""
    return _results(source, read_rows(source, keys), options.select)


def explain(
    source: QuerySource, flt: QueryFilter | None, sow_keys: Sequence[Key] | None = None
) -> Plan:
    """The plan :func:`run_query` would use (builds memo indexes it needs, as a query would).

    Example:
        >>> explain(topic, compile_filter("/region = 'EU'")).describe()  # doctest: +SKIP
        "hash hash(/region) [/region = 'EU'] 120 candidates"
    """
    return plan(source, flt, sow_keys)
