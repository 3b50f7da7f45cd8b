"""Prepared queries: what a topic keeps of a query asked once for the next time it is
asked (spec §13), and the page of a memo-indexed order that needs no plan.

A topic keeps a :class:`Prepared` per query it was asked with plain arguments (the
filter's text and the options; at most :data:`MOST`): asking the same again skips
compiling the filter and checking the options. A page of records in the order of one
memo-indexed field with no filter (``top_n`` and one ``order_by`` term, no ``skip_n`` or
``select``) goes straight to the index's top keys (as
:func:`~sowlib.query.pipeline.top_rows` does), with no plan; everything else runs
:func:`~sowlib.query.pipeline.run_query`, the reference both are tested against
(``tests/test_prepared_queries.py``). Imports ``index``, ``paths`` and the sibling
``options``, ``pipeline`` and ``resultset``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from sowlib.index.indexset import IndexSet
from sowlib.index.memo import MemoIndex
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.query.options import QueryOptions
from sowlib.query.pipeline import QueryFilter, read_rows, run_query
from sowlib.query.resultset import ResultSet
from sowlib.record import Record

__all__ = ["MOST", "PLAIN", "Prepared"]

#: Queries a topic keeps prepared at most (all are forgotten past it).
MOST = 256
#: The types of the arguments a query is kept by (exact types: ``top_n=True`` must not
#: find the query asked with ``top_n=1``).
PLAIN = frozenset((str, int, type(None)))


class Prepared:
    """A query's compiled filter and checked options, and how it runs.

    Args:
        flt: the compiled filter, or None (every record).
        options: the checked options.
    """

    __slots__ = ("_memo", "_page", "flt", "options")

    def __init__(self, flt: QueryFilter | None, options: QueryOptions) -> None:
        self.flt = flt
        self.options = options
        order, top = options.order_by, options.top_n
        page = flt is None and order is not None and len(order.keys) == 1 and top
        term = None if order is None else order.keys[0]
        #: (path, descending, top_n) of a page of a memo-indexed order, or None
        self._page: tuple[FieldPath, bool, int] | None = None
        if page and term is not None and not term.text and top and not options.skip_n:
            self._page = None if options.select is not None else (term.path, term.descending, top)
        #: (the source, its index set, memo index on the page's path and batch read of
        #: records) last found
        self._memo: tuple[QuerySource, IndexSet, MemoIndex, Callable[..., list[Record]]] | None
        self._memo = None

    def run(self, source: QuerySource, sow_keys: Sequence[Key] | None = None) -> ResultSet:
        """:func:`run_query` of this query over ``source``: the page of a memo-indexed
        order read off the index's top keys where it serves (as
        :func:`~sowlib.query.pipeline.top_rows` does). The memo index is looked up once
        per source: a source reads one index set, which never drops or replaces a memo
        index; the index set's waiting upkeep is done first each time, as reading
        ``source.indexes`` does."""
        page = self._page
        if page is not None and sow_keys is None:
            kept = self._memo
            if kept is not None and kept[0] is source:
                kept[1].settle()
            else:
                indexes = source.indexes
                memo = indexes.memo(page[0])
                many = getattr(source, "records_of", None)
                read = partial(read_rows, source) if many is None else many
                kept = self._memo = None if memo is None else (source, indexes, memo, read)
            keys = None if kept is None else kept[2].top_keys(page[2], page[1])
            if keys is not None:
                rows = kept[3](keys)  # type: ignore[index]
                if len(rows) == len(keys):  # (else a key not live: the reference decides)
                    return ResultSet(rows if len(rows) <= page[2] else rows[: page[2]])
        return run_query(source, self.flt, self.options, sow_keys)
