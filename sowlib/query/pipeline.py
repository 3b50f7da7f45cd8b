"""The query pipeline (spec §13, §18.3): ``run_query`` = candidates (``sow_keys`` /
planner) -> filter -> order -> skip -> top -> select, and ``explain``.

Imports ``index`` (the planner and the ``QuerySource`` protocol) and the sibling
modules; never ``storage``, ``topic``, ``store`` or ``spark``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

from sowlib.index.planner import FilterLike, Plan, plan
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.query.options import DEFAULT_OPTIONS, QueryOptions
from sowlib.query.order import OrderBy
from sowlib.query.resultset import ResultSet
from sowlib.query.select import SelectList

__all__ = ["WALK_RATIO", "QueryFilter", "explain", "run_query"]


class QueryFilter(FilterLike, Protocol):
    """What the pipeline needs from a compiled filter (``sowlib.expr.Filter``)."""

    @property
    def uses_context(self) -> bool: ...

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
    if found.kind not in ("scan", "memo") or found.estimated <= need * WALK_RATIO:
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
    options = options or DEFAULT_OPTIONS
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
