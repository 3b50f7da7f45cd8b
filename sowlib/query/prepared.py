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
from typing import Any

from sowlib.index.indexset import IndexSet
from sowlib.index.memo import MemoIndex
from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.query.options import QueryOptions
from sowlib.query.pipeline import QueryFilter, read_rows, run_query
from sowlib.query.resultset import ResultSet

__all__ = ["MOST", "PLAIN", "Prepared", "RowsOf", "TopKeys"]

#: Queries a topic keeps prepared at most (all are forgotten past it).
MOST = 256
#: The types of the arguments a query is kept by (exact types: ``top_n=True`` must not
#: find the query asked with ``top_n=1``).
PLAIN = frozenset((str, int, type(None)))

#: A memo index's ``top_keys(need, descending)``.
TopKeys = Callable[[int, bool], "list[Key] | None"]
#: A topic's C row reader: ``rows(keys)`` -> ``(rows, pending)`` or NotImplemented.
RowsOf = Callable[[list[Key]], Any]


class Prepared:
    """A query's compiled filter and checked options, and how it runs.

    Args:
        flt: the compiled filter, or None (every record).
        options: the checked options.
    """

    __slots__ = ("fast", "flt", "memo", "options", "page")

    def __init__(self, flt: QueryFilter | None, options: QueryOptions) -> None:
        self.flt = flt
        self.options = options
        #: (path, descending, top_n) of a page of a memo-indexed order (see
        #: :meth:`page_keys`), or None
        self.page: tuple[FieldPath, bool, int] | None = None
        #: (the source, its index set and its memo index on the page's path) last found
        self.memo: tuple[QuerySource, IndexSet, MemoIndex] | None = None
        #: What a topic binds once its page was served, to serve it again in one call
        #: per step (see :meth:`bind`): (the index set's ``settle`` where it must run
        #: first, else None; the memo index's ``top_keys``; the topic's row reader;
        #: ``top_n``; descending), or None
        self.fast: tuple[Callable[[], None] | None, TopKeys, RowsOf, int, bool] | None = None
        order, top = options.order_by, options.top_n
        if flt is not None or order is None or not top or len(order.keys) != 1:
            return
        term = order.keys[0]
        if not term.text and not options.skip_n and options.select is None:
            self.page = (term.path, term.descending, top)

    def page_keys(self, source: QuerySource) -> list[Key] | None:
        """The keys of this query's page over ``source`` in order (whole tie groups: at
        least the page's, all there are when fewer), off the memo index's top keys
        (:meth:`MemoIndex.top_keys`, as :func:`~sowlib.query.pipeline.top_rows` reads
        them), or None where that does not serve. The memo index is looked up once per
        source (a source reads one index set, which never drops or replaces a memo
        index); the index set's waiting upkeep is done first each time, as reading
        ``source.indexes`` does."""
        page = self.page
        if page is None:
            return None
        kept = self.memo
        if kept is not None and kept[0] is source:
            kept[1].settle()
        else:
            indexes = source.indexes
            memo = indexes.memo(page[0])
            kept = self.memo = None if memo is None else (source, indexes, memo)
        return None if kept is None else kept[2].top_keys(page[2], page[1])

    def bind(self, source: QuerySource, rows_of: RowsOf, settle: bool) -> None:
        """Bind :attr:`fast` to the memo index :meth:`page_keys` found last over
        ``source`` (nothing when it found none there) and the topic's row reader
        ``rows_of``, which reads ``source``'s records; ``settle``: the index set's
        waiting upkeep must be done before each read (a read-only topic defers it)."""
        kept, page = self.memo, self.page
        if kept is not None and kept[0] is source and page is not None:
            first = kept[1].settle if settle else None
            self.fast = (first, kept[2].top_keys, rows_of, page[2], page[1])

    def run(self, source: QuerySource, sow_keys: Sequence[Key] | None = None) -> ResultSet:
        """:func:`run_query` of this query over ``source``: a page read off
        :meth:`page_keys` where they serve."""
        page = self.page
        keys = None if page is None or sow_keys is not None else self.page_keys(source)
        if keys is not None and page is not None:
            rows = read_rows(source, keys)
            if len(rows) == len(keys):  # (else a key not live: the reference decides)
                need = page[2]
                return ResultSet(rows if len(rows) <= need else rows[:need])
        return run_query(source, self.flt, self.options, sow_keys)
