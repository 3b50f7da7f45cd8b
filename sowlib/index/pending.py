"""Writes whose index upkeep waits for the next read of the indexes (imports only
``index.types``).

A read-only topic following a writer applies the new records to its key map at once
(by-key reads see them), but its indexes are read only by queries: the columns of the
indexed values are kept here, run after run, and filed in one batch when an index is
next read (``IndexSet.settle``), once for a key written many times meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from sowlib.index.types import Key

__all__ = ["PendingUpkeep"]


class PendingUpkeep:
    """Runs of ``(keys, columns, inserted)`` as ``IndexSet.put_columns`` takes them, in
    write order."""

    __slots__ = ("_runs", "rows")

    def __init__(self) -> None:
        self._runs: list[tuple[Sequence[Key], Sequence[Sequence[Any]], Sequence[bool]]] = []
        #: Rows held (a key written in two runs counts twice).
        self.rows = 0

    def __bool__(self) -> bool:
        return bool(self._runs)

    def add(
        self, keys: Sequence[Key], columns: Sequence[Sequence[Any]], inserted: Sequence[bool]
    ) -> None:
        """Hold one run (the caller keeps none of its lists)."""
        self._runs.append((keys, columns, inserted))
        self.rows += len(keys)

    def take(self) -> tuple[list[Key], list[list[Any]], list[bool]]:
        """Every run held as one, in order, and forget them; O(rows), C-level."""
        runs, self._runs, self.rows = self._runs, [], 0
        keys = list(chain.from_iterable(run[0] for run in runs))
        width = len(runs[0][1]) if runs else 0
        columns = [list(chain.from_iterable(run[1][at] for run in runs)) for at in range(width)]
        inserted = list(chain.from_iterable(run[2] for run in runs))
        return keys, columns, inserted
