"""The queries of a topic: ``sow`` and ``explain``, the facade's path to ``run_query``.

:class:`~sowlib.topic.facade.Topic` inherits :class:`Queries`. A query takes the topic's
lock, runs what is due (expirations, a lazy writer's changes), compiles its filter (the
cached compile) and hands the source to :func:`sowlib.query.run_query`; only a filter
that can run a regex (LIKE, REGEXP_REPLACE) opens a regex budget. A query asked with
plain arguments is kept prepared (:mod:`sowlib.query.prepared`): asked again, its filter
is not compiled nor its options checked again, and a page of a memo-indexed order
(``top_n``, one ``order_by`` term, no filter), once served, is read the next time off
the index's top keys by the C reader, straight from ``sow`` (``Prepared.bind``; anything
that path does not serve falls through to the query). Imports ``expr``,
``query``, ``results`` and the sibling ``parts``/``views``/``keyreads``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sowlib.errors import UnsupportedOperationError
from sowlib.expr import Filter, compile_filter, regex_budget
from sowlib.query import QueryOptions, QuerySource, ResultSet, explain, live_rows
from sowlib.query.prepared import MOST, PLAIN, Prepared
from sowlib.results import split_keys
from sowlib.topic.keyreads import KeyReads
from sowlib.topic.parts import as_of

__all__ = ["Queries"]


class Queries(KeyReads):
    """The query half of :class:`~sowlib.topic.facade.Topic` (its attributes are set by
    the Topic's constructor)."""

    message_type: str
    #: The queries kept prepared (:mod:`sowlib.query.prepared`), with the parts they
    #: were asked of: ``(parts, {(filter, order_by, top_n, skip_n, select,
    #: batch_size): Prepared})``.
    _prepared: tuple[object, dict[tuple[object, ...], Prepared]] | None = None

    def _compile(self, flt: str | Filter | None) -> Filter | None:
        if flt is None:
            return None
        compiled = compile_filter(flt)
        if not self._p.views.filterable and compiled.fields:
            what = f"topic {self.name!r} holds {self.message_type} messages, which cannot be"
            raise UnsupportedOperationError(
                "a content filter", f"{what} filtered; use '1=1' or sow_keys="
            )
        return compiled

    def sow(
        self,
        filter: str | Filter | None = None,
        *,
        order_by: str | None = None,
        top_n: int | None = None,
        skip_n: int | None = None,
        sow_keys: Sequence[str] | str | None = None,
        bookmark: int | float | str | datetime | None = None,
        select: str | None = None,
        batch_size: int = 10,
        project: str | None = None,
    ) -> Any:
        """Query the topic: records matching ``filter`` (all when None).

        Args:
            filter: an AMPS filter expression.
            order_by: ``"/price DESC, /id"``; results are unordered without it.
            top_n: at most this many records.
            skip_n: skip this many records first (needs top_n).
            sow_keys: restrict to these keys (a list or a comma-separated string).
            bookmark: a sequence number, epoch seconds, a datetime or an AMPS
                timestamp (``20240301T090000Z``): answer as of that point (history topics;
                ignored without history, as in AMPS).
            select: a select list such as ``"[-/,+/id]"``.
            project: a JMESPath expression applied to each matching document,
                e.g. ``"{id: orderId, px: price}"``; the result is then a list of
                its values instead of records (:meth:`ResultSet.project`).
        Returns:
            A :class:`~sowlib.query.ResultSet` of :class:`Record` (a list), or the
            projected values when ``project`` is given.
        Raises:
            FilterError: a bad filter.
            RegexBudgetError: LIKE matching spent the query's regex budget.
            QueryOptionError: a bad query option or projection.
        """
        asked = (filter, order_by, top_n, skip_n, select, batch_size)
        plain = PLAIN.issuperset(map(type, asked))
        kept = self._prepared
        prepared = kept[1].get(asked) if plain and kept is not None and kept[0] is self._p else None
        fast = None if prepared is None else prepared.fast
        if fast is not None and sow_keys is None and bookmark is None and project is None:
            with self._lock:  # a page bound to its memo index (Prepared.bind)
                p = self._p
                if not (self._closed or self._materialize is not None or p.expiry.heap):
                    settle, top_keys, rows_of, need, descending = fast
                    if settle is not None:
                        settle()
                    keys = top_keys(need, descending) or ()  # (None: not served)
                    got = rows_of(keys) if keys else NotImplemented
                    if got is not NotImplemented and not got[1] and len(got[0]) == len(keys):
                        p.writer.counts["queries"] += 1
                        rows = got[0]
                        return ResultSet(rows if len(rows) <= need else rows[:need])
        if prepared is None:  # checked now (before the lock, as it always was)
            options = QueryOptions.make(
                order_by=order_by, top_n=top_n, skip_n=skip_n, select=select, batch_size=batch_size
            )
        else:
            options = prepared.options
        texts = None if sow_keys is None else split_keys(sow_keys)
        results = self._query(filter, options, texts, bookmark, prepared, asked if plain else None)
        return results if project is None else results.project(project)

    def _query(
        self,
        filter: str | Filter | None,
        options: QueryOptions,
        texts: list[str] | None,
        bookmark: int | float | str | datetime | None,
        prepared: Prepared | None = None,
        asked: tuple[object, ...] | None = None,
    ) -> ResultSet:
        with self._lock:
            p = self._p
            if self._closed or self._materialize is not None or p.expiry.heap:
                self._check_open()
                self._tick()  # (the checks inline: nothing is due in the common case)
            if prepared is None:
                prepared = Prepared(None if filter is None else self._compile(filter), options)
                if asked is not None:
                    self._keep_prepared(p, asked, prepared)
            flt = cast("Filter | None", prepared.flt)  # (made by _compile)
            p.writer.counts["queries"] += 1
            keys = None if texts is None else [p.keys.key_of(k) for k in texts]
            source: QuerySource = p.source
            if bookmark is not None and p.history is not None:
                source = as_of(p, bookmark, self._clock())
            elif flt is None and keys is None and options.order_by is None:
                top = options.top_n  # the first top_n records, unordered: only those are read
                if not options.skip_n and top is not None:
                    return live_rows(source, p.views.first_keys(top), options)
            if flt is not None and flt.regex:
                with regex_budget():
                    return prepared.run(source, keys)
            results = prepared.run(source, keys)
            if prepared.page is not None and prepared.fast is None and keys is None:
                rows_of = p.views.rows_reader  # (the next time, from sow at once)
                if rows_of is not None and source is p.source:
                    prepared.bind(source, rows_of, self._readonly)
            return results

    def _keep_prepared(self, parts: object, asked: tuple[object, ...], prepared: Prepared) -> None:
        """Keep ``prepared`` for the next ``sow`` asked with ``asked`` (see
        :mod:`sowlib.query.prepared`); the kept queries are those of the current parts."""
        kept = self._prepared
        if kept is None or kept[0] is not parts or len(kept[1]) >= MOST:
            kept = self._prepared = (parts, {})
        kept[1][asked] = prepared

    def explain(self, filter: str | Filter | None = None, *, sow_keys: Any = None) -> Any:
        """The plan a query with this filter would use (index, candidates)."""
        with self._lock:
            self._check_open()
            texts = split_keys(sow_keys)
            keys = None if texts is None else [self._p.keys.key_of(k) for k in texts]
            return explain(self._p.source, self._compile(filter), keys)
