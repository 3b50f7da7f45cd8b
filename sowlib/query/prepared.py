"""Prepared queries: what a topic keeps of a query asked once for the next time it is
asked (spec §13), and how a kept page of a memo-indexed order is served again.

A topic keeps a :class:`Prepared` per query it was asked with plain arguments (the
filter's text and the options; at most :data:`MOST`): asking the same again skips
compiling the filter and checking the options. Every kept query runs
:func:`~sowlib.query.pipeline.run_query`; a page of records in the order of one
memo-indexed field with no filter (``top_n`` and one ``order_by`` term, no ``skip_n`` or
``select``), once served, is bound to that index's top keys and the topic's row reader
(:meth:`Prepared.bind`), which the topic's ``sow`` calls directly the next time (what
:func:`~sowlib.query.pipeline.top_rows` does, with no plan); a filter with no options
that one exact hash index lookup answers (an equality on a hash-indexed field), asked a
second time, is bound to the plan the topic keeps for it (:meth:`Prepared.bind_lookup`),
whose candidates ``sow`` reads whole from then on. ``run_query`` is the reference both are
tested against (``tests/test_prepared_queries.py``). Imports ``index``, ``paths``,
``record`` and the sibling ``options``, ``pipeline`` and ``resultset``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.query.options import QueryOptions
from sowlib.query.pipeline import QueryFilter, exact_lookup, run_query
from sowlib.query.resultset import ResultSet
from sowlib.record import Record

__all__ = ["MOST", "PLAIN", "LookupBound", "Prepared", "Records", "RowsOf", "TopKeys"]

#: Queries a topic keeps prepared at most (all are forgotten past it).
MOST = 256
#: The types of the arguments a query is kept by (exact types: ``top_n=True`` must not
#: find the query asked with ``top_n=1``).
PLAIN = frozenset((str, int, type(None)))

#: A memo index's ``top_keys(need, descending)``.
TopKeys = Callable[[int, bool], "list[Key] | None"]
#: A topic's C row reader: ``rows(keys)`` -> ``(rows, pending)`` or NotImplemented.
RowsOf = Callable[[list[Key]], Any]
#: A topic's records of keys (``TopicViews.records``): the live ones, in order.
Records = Callable[[Iterable[Key]], list[Record]]
#: :attr:`Prepared.lookup`: (``settle`` or None, the plan's candidates and unsure, the
#: topic's :data:`Records`).
LookupBound = tuple[
    Callable[[], None] | None,
    Callable[[], Iterable[Key] | None],
    Callable[[], Collection[Key]],
    Records,
]


class Prepared:
    """A query's compiled filter and checked options, and how it runs.

    Args:
        flt: the compiled filter, or None (every record).
        options: the checked options.
    """

    __slots__ = ("fast", "flt", "looked", "lookup", "options", "page")

    def __init__(self, flt: QueryFilter | None, options: QueryOptions) -> None:
        self.flt = flt
        self.options = options
        #: (path, descending, top_n) of a page of a memo-indexed order (see :meth:`bind`),
        #: or None
        self.page: tuple[FieldPath, bool, int] | None = None
        #: What a topic binds once its page was served, to serve it again in one call
        #: per step (see :meth:`bind`): (the index set's ``settle`` where it must run
        #: first, else None; the memo index's ``top_keys``; the topic's row reader;
        #: ``top_n``; descending), or None
        self.fast: tuple[Callable[[], None] | None, TopKeys, RowsOf, int, bool] | None = None
        #: What a topic binds once this filter, asked with no options, was answered by
        #: one exact hash index lookup (see :meth:`bind_lookup`): (``settle`` or None as
        #: in :attr:`fast`; the plan's candidates and unsure; the topic's records of
        #: keys), or None
        self.lookup: LookupBound | None = None
        #: Whether :meth:`bind_lookup` was tried, or has nothing to bind (options)
        self.looked = flt is None or not (
            options.order_by is None
            and options.top_n is None
            and not options.skip_n
            and options.select is None
        )
        order, top = options.order_by, options.top_n
        if flt is not None or order is None or not top or len(order.keys) != 1:
            return
        term = order.keys[0]
        if not term.text and not options.skip_n and options.select is None:
            self.page = (term.path, term.descending, top)

    def bind(self, source: QuerySource, rows_of: RowsOf, settle: bool) -> None:
        """Bind :attr:`fast` to the memo index on this page's path over ``source``
        (nothing when there is none, or this query is no page) and the topic's row
        reader ``rows_of``, which reads ``source``'s records. The keys the index's
        ``top_keys`` gives (whole tie groups, each in SOW key order: at least the page's)
        are read as :func:`~sowlib.query.pipeline.top_rows` reads them; a source reads
        one index set, which never drops or replaces a memo index. ``settle``: the index
        set's waiting upkeep must be done before each read (a read-only topic defers it,
        and reading ``source.indexes`` does it)."""
        page = self.page
        if page is None:
            return
        indexes = source.indexes
        memo = indexes.memo(page[0])
        if memo is not None:
            first = indexes.settle if settle else None
            self.fast = (first, memo.top_keys, rows_of, page[2], page[1])

    def bind_lookup(self, source: QuerySource, records: Records, settle: bool) -> None:
        """Bind :attr:`lookup` to the plan ``source`` keeps for this filter, when it is
        one exact hash index lookup (:func:`~sowlib.query.pipeline.exact_lookup`) and the
        query has no options, and to the topic's ``records`` of keys, which reads
        ``source``'s records: the topic's ``sow`` then reads the candidates whole while
        the plan has no unsure ones, as ``run_query`` does, with no plan looked up. A
        source keeps one index set, whose hash indexes are made with it. ``settle`` as
        in :meth:`bind`. Tried once per prepared query."""
        if self.looked:
            return
        self.looked = True
        found = None if self.flt is None else exact_lookup(source, self.flt)
        if found is not None:
            first = source.indexes.settle if settle else None
            self.lookup = (first, found[0], found[1], records)

    def run(self, source: QuerySource, sow_keys: Sequence[Key] | None = None) -> ResultSet:
        """:func:`run_query` of this query over ``source``."""
        return run_query(source, self.flt, self.options, sow_keys)
