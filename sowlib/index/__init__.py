"""Indexes and the query planner (spec §7): hash indexes, memo indexes, plans.

Must not import ``storage``, ``topic``, ``store`` or ``spark``.
"""

from __future__ import annotations

from sowlib.index.hash import HashIndex
from sowlib.index.indexset import Index, IndexSet
from sowlib.index.memo import MemoIndex
from sowlib.index.planner import Plan, plan

__all__ = ["HashIndex", "Index", "IndexSet", "MemoIndex", "Plan", "plan"]
