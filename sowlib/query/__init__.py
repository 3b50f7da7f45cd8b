"""Queries: options, ordering, select lists, result sets and the pipeline (spec §13).

``pipeline.run_query`` = candidates (``sow_keys`` / planner) -> filter -> order -> skip
-> top -> select. The package never imports ``storage``, ``topic``, ``store`` or
``spark``; the planner and the ``QuerySource`` protocol it reads live in ``index``.
"""

from sowlib.index.source import QuerySource
from sowlib.query.options import DEFAULT_OPTIONS, MAX_BATCH_SIZE, QueryOptions
from sowlib.query.order import OrderBy, OrderKey
from sowlib.query.pipeline import QueryFilter, explain, live_rows, run_query
from sowlib.query.resultset import ResultSet
from sowlib.query.select import SelectList
from sowlib.record import Record

__all__ = [
    "DEFAULT_OPTIONS",
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
    "live_rows",
    "run_query",
]
