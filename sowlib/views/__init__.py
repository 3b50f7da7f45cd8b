"""Derived SOW topics: views (aggregation over a topic), conflated topics, aggregated queries.

Sits between ``sowlib.topic`` and ``sowlib.store`` and imports neither: topics are
duck-typed. ``aggregates`` (states) <- ``definition`` (specs) <- ``engine`` (groups)
<- ``maintain`` (keeping topics current) and ``fastrow`` <- ``feed`` (a view kept by
the write path, written lazily) <- ``query`` <- ``saved`` (definitions kept in the
store directory) <- ``derived`` (the store mixin).
"""

from sowlib.views.aggregates import AGGREGATES
from sowlib.views.definition import CompiledView, ViewSpec, compile_view
from sowlib.views.derived import DerivedTopics
from sowlib.views.engine import GroupTable
from sowlib.views.query import AggregateRecord, AggregateSubscription, grouped_sow

__all__ = [
    "AGGREGATES",
    "AggregateRecord",
    "AggregateSubscription",
    "CompiledView",
    "DerivedTopics",
    "GroupTable",
    "ViewSpec",
    "compile_view",
    "grouped_sow",
]
