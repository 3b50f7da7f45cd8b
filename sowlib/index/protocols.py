"""What an index set works with: an index, a source for on-demand builds, a write listener.

Imports only ``paths`` and ``index.types``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from sowlib.index.types import Key
from sowlib.paths import FieldPath

__all__ = ["DocSource", "Index", "WriteListener"]


class Index(Protocol):
    """What every index offers the topic: a name, its fields and maintenance."""

    @property
    def name(self) -> str: ...

    @property
    def fields(self) -> tuple[FieldPath, ...]: ...

    def add(self, key: Key, doc: Any) -> None: ...

    def remove(self, key: Key, doc: Any) -> None: ...

    def clear(self) -> None: ...


class WriteListener(Protocol):
    """Something that follows every write with the values of its own paths (the
    in-memory columns of ``sowlib.columns``); attached with :meth:`IndexSet.attach`.
    It needs no old value: an update is a put of the new values."""

    @property
    def paths(self) -> tuple[FieldPath, ...]: ...

    def put(self, key: Key, values: Sequence[Any]) -> None: ...

    def put_many(self, keys: Sequence[Key], columns: Sequence[Sequence[Any]]) -> None: ...

    def delete(self, key: Key) -> None: ...

    def clear(self) -> None: ...


class DocSource(Protocol):
    """The part of a query source an on-demand index build needs."""

    def field_values(self, path: FieldPath) -> Iterable[tuple[Key, Any]]:
        """``(key, value of path)`` for every live record; documents are not kept."""
        ...
