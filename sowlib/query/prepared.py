"""Prepared queries: what a topic keeps of a query asked once for the next time it is
asked (spec §13), and how a kept page of a memo-indexed order is served again.

A topic keeps a :class:`Prepared` per query it was asked with plain arguments (the
filter's text and the options; at most :data:`MOST`): asking the same again skips
compiling the filter and checking the options. Every kept query runs
:func:`~sowlib.query.pipeline.run_query`; a page of records in the order of one
memo-indexed field with no filter (``top_n`` and one ``order_by`` term, no ``skip_n`` or
``select``), once served, is bound to that index's top keys and the topic's row reader
(:meth:`Prepared.bind`), which the topic's ``sow`` calls directly the next time (what
:func:`~sowlib.query.pipeline.top_rows` does, with no plan); ``run_query`` is the
reference it is tested against (``tests/test_prepared_queries.py``). Imports ``index``,
``paths`` and the sibling ``options``, ``pipeline`` and ``resultset``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sowlib.index.source import QuerySource
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.query.options import QueryOptions
from sowlib.query.pipeline import QueryFilter, run_query
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

    __slots__ = ("fast", "flt", "options", "page")

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

    def run(self, source: QuerySource, sow_keys: Sequence[Key] | None = None) -> ResultSet:
        """:func:`run_query` of this query over ``source``."""
        return run_query(source, self.flt, self.options, sow_keys)
