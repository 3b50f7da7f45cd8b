"""What the planner and the query pipeline read from a topic: :class:`QuerySource`.

A protocol module of its own, so that ``index.planner`` and ``query`` both import it
and neither imports the other's caller. Imports only ``index``, ``paths`` and
``record``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

from sowlib.index.indexset import IndexSet
from sowlib.index.types import Key
from sowlib.paths import FieldPath
from sowlib.record import Record

__all__ = ["QuerySource"]


class QuerySource(Protocol):
    """A topic as the query pipeline sees it; every call happens under the topic's lock."""

    name: str
    message_type: str
    key_fields: tuple[FieldPath, ...]

    @property
    def indexes(self) -> IndexSet:
        """The topic's indexes, up to date with every write it holds."""
        ...

    def keys(self) -> Iterable[Key]: ...

    def __len__(self) -> int: ...

    def record(self, key: Key) -> Record | None: ...

    def doc(self, key: Key) -> Any: ...

    def docs(self, keys: Iterable[Key]) -> Iterable[tuple[Key, Any]]:
        """``(key, document)`` of each live key of ``keys``, in order (read in batches)."""
        ...

    def scan(self) -> Iterable[tuple[Key, Any]]:
        """``(key, document)`` of every live record (a full scan, in the source's order)."""
        ...

    def field_values(self, path: FieldPath) -> Iterable[tuple[Key, Any]]: ...

    def byte_plan(self, node: Any) -> tuple[int, Callable[[], Collection[Key]]] | None: ...

    def key_for_values(self, values: Sequence[Any]) -> Key | None: ...

    def encode(self, doc: Any) -> bytes: ...

    def context(self, key: Key) -> Any: ...
