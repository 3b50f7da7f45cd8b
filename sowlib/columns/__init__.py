"""In-memory columns of the fields filters scan, and the plan that reads them.

See :mod:`sowlib.columns.store` (the columns, kept up to date on every write) and
:mod:`sowlib.columns.plan` (when a query uses them). Needs numpy; without it no
column plan is ever made. Imports only ``expr``, ``paths``, ``errors`` and
``document``.
"""

from __future__ import annotations

from sowlib.columns.coded import CodedColumn
from sowlib.columns.plan import ColumnPlan, column_plan, select_docs, vector_filter

__all__ = ["CodedColumn", "ColumnPlan", "column_plan", "select_docs", "vector_filter"]
