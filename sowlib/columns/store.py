"""Typed in-memory columns of the fields filters scan, one row per live key.

A :class:`ColumnStore` follows every write of its topic (the topic's index set calls
:meth:`~ColumnStore.put`, :meth:`~ColumnStore.put_many`, :meth:`~ColumnStore.delete`
and :meth:`~ColumnStore.clear` with the values it already resolved: no document is
read again) and answers a compiled :class:`~sowlib.expr.vector.VectorFilter` with
the keys whose row matches. Imports only ``expr``, ``paths``, ``document`` and
``columns``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

import numpy as np

from sowlib.columns.column import MISSING_CODE, Column, entry_key, recode_limit
from sowlib.expr.vector import VectorFilter
from sowlib.paths import FieldPath

__all__ = ["ColumnStore", "RowMap"]

Key = Hashable  # a topic's in-memory key: an int (content keys) or the key text


class RowMap(Protocol):
    """Key -> row: a dict, or the topic's C key table (about 40 bytes a key, not 100)."""

    def get(self, key: Any, /) -> Any: ...

    def pop(self, key: Any, default: None, /) -> Any: ...

    def __setitem__(self, key: Any, value: Any, /) -> None: ...

    def update(self, pairs: Iterable[tuple[Any, Any]], /) -> None: ...

    def __len__(self) -> int: ...

    def clear(self) -> None: ...


_FIRST_CAPACITY = 1024


class ColumnStore:
    """Columns for some field paths over the live keys of one topic.

    Rows are reused after deletes (a free list), so memory follows the live count:
    per row an 8-byte key slot (content keys unboxed), a flag, an entry key -> row in
    ``rows`` (a dict by default), and 12 bytes per column
    (:class:`~sowlib.columns.column.Column`).

    Args:
        rows: the key -> row map to fill (empty); a dict when None.
        int_keys: keys are u64 ints (content keys): held unboxed.

    Attributes:
        stale: True once the topic was reloaded behind the store's back
            (:meth:`clear`); the planner then builds a new store.
    """

    def __init__(self, rows: RowMap | None = None, int_keys: bool = False) -> None:
        self.columns: dict[FieldPath, Column] = {}
        self.stale = False
        self._row: RowMap = cast("RowMap", {}) if rows is None else rows
        # content keys (u64 ints) sit unboxed; anything else makes it an object array
        self._keys = np.empty(_FIRST_CAPACITY, dtype=np.uint64 if int_keys else object)
        self._alive = np.zeros(_FIRST_CAPACITY, dtype=bool)
        self._free: list[int] = []
        self._rows = 0
        self._recode_at = recode_limit(0)

    # ----------------------------------------------------------- what a write calls

    @property
    def paths(self) -> tuple[FieldPath, ...]:
        """The fields held, in the order :meth:`put` and :meth:`put_many` take values."""
        return tuple(self.columns)

    def put(self, key: Key, values: Sequence[Any]) -> None:
        """``key`` now holds ``values`` (one per :attr:`paths`); O(columns)."""
        if self.stale:
            return
        row = self._row.get(key)
        if row is None:
            row = self._allot(key)
        for column, value in zip(self.columns.values(), values, strict=True):
            column.set(row, value)
            if len(column.values) > self._recode_at:
                self._tidy()

    def put_many(self, keys: Sequence[Key], columns: Sequence[Sequence[Any]]) -> None:
        """:meth:`put` for many keys, values given a column (one per :attr:`paths`) at a
        time; O(len(keys) x columns)."""
        if self.stale:
            return
        last = dict(zip(keys, range(len(keys)), strict=True))
        if len(last) != len(keys):  # a repeated key keeps its last values
            at = sorted(last.values())
            keys = [keys[i] for i in at]
            columns = [[column[i] for i in at] for column in columns]
        rows = self._rows_of(keys)
        for column, values in zip(self.columns.values(), columns, strict=True):
            column.set_many(rows, values)
        self._tidy()

    def _rows_of(self, keys: Sequence[Key]) -> Any:
        """The row of each of ``keys``, allotted where it has none (an int array)."""
        found = list(map(self._row.get, keys))
        if None in found:
            new = [k for k, r in zip(keys, found, strict=True) if r is None]
            self._allot_many(list(dict.fromkeys(new)))
            found = list(map(self._row.get, keys))
        return np.asarray(found, dtype=np.intp)

    def delete(self, key: Key) -> None:
        """``key`` is gone (deleted, expired); O(columns)."""
        if self.stale:
            return
        row = self._row.pop(key, None)
        if row is None:
            return
        self._keys[row] = None if self._keys.dtype == object else 0
        self._alive[row] = False
        self._free.append(row)
        for column in self.columns.values():
            column.clear_row(row)

    def clear(self) -> None:
        """The topic's indexes were emptied to be loaded again: this store is out of date."""
        self.stale = True
        self._row.clear()

    # ----------------------------------------------------------- building

    def add_column(self, path: FieldPath, pairs: Iterable[tuple[Key, Any]]) -> None:
        """Hold ``path`` too, filled from ``(key, value)`` of every live record.

        The first column also creates the rows (one per key given).
        """
        pairs = list(pairs)
        keys = [k for k, _v in pairs]
        self.add_columns([path], [(keys, [[v for _k, v in pairs]])])

    def add_columns(
        self,
        paths: Sequence[FieldPath],
        chunks: Iterable[tuple[Sequence[Key], Sequence[Sequence[Any]]]],
    ) -> None:
        """Hold ``paths`` too, filled from ``(keys, a column of values per path)`` chunks
        that cover every live record once; O(records x paths).

        The first columns also create the rows (one per key given).
        """
        made = []
        for path in paths:
            column = Column(path, len(self._keys))
            column.rows = self._rows
            self.columns[path] = column
            made.append(column)
        for keys, values in chunks:
            rows = self._rows_of(keys)
            for column, column_values in zip(made, values, strict=True):
                column.set_many(rows, column_values)
        self._tidy()

    def _allot(self, key: Key) -> int:
        if self._free:
            row = self._free.pop()
        else:
            row = self._rows
            if row == len(self._keys):
                self._grow(row + row // 4 + _FIRST_CAPACITY)  # a quarter more: memory
            self._rows = row + 1
            for column in self.columns.values():
                column.rows = self._rows
        self._row[key] = row
        try:
            self._keys[row] = key
        except (TypeError, ValueError, OverflowError):  # not a u64: hold key objects
            self._keys = self._keys.astype(object)
            self._keys[row] = key
        self._alive[row] = True
        return row

    def _allot_many(self, keys: list[Key]) -> None:
        """:meth:`_allot` of distinct new keys at once: free rows first, then rows past
        the end; O(len(keys)), C-level."""
        free = self._free
        take = min(len(free), len(keys))
        rows = free[len(free) - take :]
        del free[len(free) - take :]
        start = self._rows
        end = start + len(keys) - take
        if end > len(self._keys):
            self._grow(max(end, start + start // 4 + _FIRST_CAPACITY))
        self._rows = end
        for column in self.columns.values():
            column.rows = end
        rows.extend(range(start, end))
        try:
            self._keys[rows] = np.asarray(keys, dtype=self._keys.dtype)
        except (TypeError, ValueError, OverflowError):  # not all u64: hold key objects
            self._keys = self._keys.astype(object)
            held = np.empty(len(keys), dtype=object)
            held[:] = keys
            self._keys[rows] = held
        self._alive[rows] = True
        self._row.update(zip(keys, rows, strict=True))

    def _grow(self, capacity: int) -> None:
        more = capacity - len(self._keys)
        self._keys = np.concatenate((self._keys, np.zeros(more, dtype=self._keys.dtype)))
        self._alive = np.concatenate((self._alive, np.zeros(more, dtype=bool)))
        for column in self.columns.values():
            column.grow(capacity)

    def _tidy(self) -> None:
        live = len(self._row)
        for column in self.columns.values():
            if column.needs_recode(live):
                column.recode()
        # a put checks again once a dictionary passes this size (a delete may lower the
        # live count meanwhile: the next batch or build checks with it)
        self._recode_at = recode_limit(live)

    # ----------------------------------------------------------- reading

    @property
    def live(self) -> int:
        """How many keys have a row."""
        return len(self._row)

    @property
    def rows(self) -> int:
        """Rows in use or free (the length of every column a frame shows)."""
        return self._rows

    def column(self, path: FieldPath) -> Column:
        """The column of ``path`` (:class:`~sowlib.expr.vector.Frame`)."""
        return self.columns[path]

    def select(self, flt: VectorFilter) -> list[Key]:
        """The keys whose row ``flt`` matches, in row order; O(rows) numpy work."""
        mask = flt.run(self) & self._alive[: self._rows]
        keys: list[Key] = self._keys[: self._rows][mask].tolist()
        return keys

    def keys_in_rows(self) -> list[Key]:
        """Every live key, in row order."""
        return list(self._keys[: self._rows][self._alive[: self._rows]].tolist())

    def check(self, docs: Mapping[Key, Any]) -> None:
        """Assert a row per live key holding each field's value, free rows missing.

        ``docs`` maps every live key to its document. O(keys x columns).

        Raises:
            AssertionError: the columns disagree with the documents.
        """
        if self.stale:
            return  # rebuilt before any query reads it
        assert self.live == len(docs), f"columns hold {self.live} keys, the topic {len(docs)}"
        dead = np.flatnonzero(~self._alive[: self._rows]).tolist()
        for path, column in self.columns.items():
            getter = path.getter
            for key, doc in docs.items():
                row = self._row.get(key)
                assert row is not None, f"no column row for key {key!r}"
                held, want = column.value(row), getter(doc)
                assert entry_key(held) == entry_key(want), f"{path} of {key!r}: {held!r}"
            assert all(column.code[r] == MISSING_CODE for r in dead), f"{path}: a free row"

    def nbytes(self) -> int:
        """Memory of the arrays (keys, flags, columns); dictionaries and the key map not counted."""
        total = self._keys.nbytes + self._alive.nbytes
        for column in self.columns.values():
            total += column.num.nbytes + column.code.nbytes
        return total
