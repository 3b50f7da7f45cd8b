"""The indexed values of a run of records, read out of their payloads: at once, or when
the index upkeep they feed is done (a read-only topic's refresh, whose upkeep waits for
the next query: ``IndexSet.defer_columns``).

Imports ``index`` and the sibling ``views`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from sowlib.index import IndexSet
from sowlib.topic.views import Views

__all__ = ["LateColumns", "payload_columns"]


def payload_columns(views: Views, indexes: IndexSet, payloads: list[bytes]) -> list[list[Any]]:
    """The values of the index set's paths in ``payloads``, a column per path (as
    :meth:`IndexSet.columns` gives them from the documents): read out of the bytes by the
    codec's ``top_columns`` where every path is a top-level field and the codec has one,
    else from the decoded documents."""
    top = getattr(views.codec, "top_columns", None) if views.filterable else None
    names = indexes.top_names
    if top is not None and None not in names:
        got: list[list[Any]] | None = top(payloads, names)
        if got is not None:
            return got
    return indexes.columns(views.decode_many(payloads))


class LateColumns(Sequence[Sequence[Any]]):
    """:func:`payload_columns` of ``payloads``, read at the first access to a column
    (then kept): what a read-only topic's refresh hands to ``IndexSet.defer_columns``,
    so that a refresh reads no payload and the upkeep reads each run's once. The
    payloads are the writer's own, checked when they were published (the documents
    decode), and copies (a compaction that replaces the map leaves them whole).

    [R] A column is read for the index set's paths as they are when it is read: upkeep
    done then files the values of the indexes that exist then."""

    __slots__ = ("_columns", "_indexes", "_payloads", "_views")

    def __init__(self, views: Views, indexes: IndexSet, payloads: list[bytes]) -> None:
        self._views, self._indexes, self._payloads = views, indexes, payloads
        self._columns: list[list[Any]] | None = None

    def _read(self) -> list[list[Any]]:
        columns = self._columns
        if columns is None:
            columns = self._columns = payload_columns(self._views, self._indexes, self._payloads)
            self._payloads = []
        return columns

    def __len__(self) -> int:
        return len(self._indexes.paths) if self._columns is None else len(self._columns)

    @overload
    def __getitem__(self, at: int) -> Sequence[Any]: ...

    @overload
    def __getitem__(self, at: slice) -> Sequence[Sequence[Any]]: ...

    def __getitem__(self, at: int | slice) -> Sequence[Any] | Sequence[Sequence[Any]]:
        return self._read()[at]
