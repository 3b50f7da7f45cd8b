"""The indexes one topic maintains: configured hash indexes, memo indexes, key-field bookkeeping.

The topic calls :meth:`IndexSet.on_put` / :meth:`IndexSet.on_delete` on every
write; the planner reads it. Imports only ``paths`` and ``index.*``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import attrs

from sowlib.index.hash import HashIndex
from sowlib.index.memo import MemoIndex
from sowlib.index.values import as_path, as_paths, number_text, to_number
from sowlib.paths import FieldPath

__all__ = ["DocSource", "Index", "IndexSet", "is_regular_key_value"]


class Index(Protocol):
    """What every index offers the topic: a name, its fields and maintenance."""

    @property
    def name(self) -> str: ...

    @property
    def fields(self) -> tuple[FieldPath, ...]: ...

    def add(self, key: str, doc: Any) -> None: ...

    def remove(self, key: str, doc: Any) -> None: ...

    def clear(self) -> None: ...


class DocSource(Protocol):
    """The part of a query source an on-demand index build needs."""

    def keys(self) -> Iterable[str]: ...

    def doc(self, key: str) -> Any: ...


def is_regular_key_value(value: Any) -> bool:
    """True when only literals with the same canonical text can equal ``value``.

    For such values the SOW key computed from a literal finds the record
    (spec §6.3: keys use canonical text); other records (arrays, ``"05"``,
    NaN, huge integers) are remembered apart and always re-checked.
    """
    if value is True or value is False:
        return True
    if isinstance(value, int | float):
        return number_text(value) is not None
    if isinstance(value, str) and value:
        num = to_number(value)
        return num is None or number_text(num) == value
    return False


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@attrs.define(eq=False, init=False)
class IndexSet:
    """Every index of one topic.

    Args:
        key_fields: the topic's key fields (``()`` for publisher-supplied keys).
        hash_indexes: field lists, one per configured hash index.
        memo: fields with a memo index created in advance.

    Example:
        >>> ix = IndexSet(["/id"], [["/region"]], ["/price"])
        >>> ix.names()
        ['hash(/region)', 'memo(/price)']
    """

    key_fields: tuple[FieldPath, ...]
    hashes: list[HashIndex]
    memos: dict[FieldPath, MemoIndex]
    #: Keys whose key-field values are not regular (see :func:`is_regular_key_value`).
    irregular: set[str]
    #: Records seen through on_put/on_delete (inserts minus deletes).
    _live: int

    def __init__(
        self,
        key_fields: Sequence[str | FieldPath] = (),
        hash_indexes: Sequence[Sequence[str | FieldPath]] = (),
        memo: Sequence[str | FieldPath] = (),
    ) -> None:
        self.key_fields = as_paths(key_fields)
        self.hashes = [HashIndex(fields) for fields in hash_indexes]
        self.memos = {}
        self.irregular = set()
        self._live = 0
        # Pre-created memo indexes are maintained from the topic's first write
        # on; on-demand ones are built by ensure_memo.
        for path in memo:
            parsed = as_path(path)
            self.memos[parsed] = MemoIndex(parsed)

    def _irregular_key(self, doc: Any) -> bool:
        return not all(is_regular_key_value(f.resolve(doc)) for f in self.key_fields)

    def on_put(self, key: str, old_doc: Any | None, new_doc: Any) -> None:
        """Maintain every index for an insert (``old_doc`` None) or an update.

        O(1) per hash index and O(log n) per memo index; an index whose fields
        did not change is skipped.
        """
        if old_doc is None:
            self._live += 1
        if self.key_fields:
            if self._irregular_key(new_doc):
                self.irregular.add(key)
            else:
                self.irregular.discard(key)
        for index in self._all():
            if old_doc is not None:
                if all(_same(f.resolve(old_doc), f.resolve(new_doc)) for f in index.fields):
                    continue
                index.remove(key, old_doc)
            index.add(key, new_doc)

    def on_delete(self, key: str, old_doc: Any) -> None:
        """Remove ``key`` (which held ``old_doc``) from every index; same costs as on_put."""
        self._live -= 1
        self.irregular.discard(key)
        for index in self._all():
            index.remove(key, old_doc)

    def maintained(self, live: int) -> bool:
        """True when every one of the source's ``live`` records went through :meth:`on_put`.

        A source that never feeds its IndexSet (a historical view) fails this,
        and the planner then does not trust :attr:`irregular`.
        """
        return self._live == live

    def _all(self) -> list[HashIndex | MemoIndex]:
        return [*self.hashes, *self.memos.values()]

    def memo(self, path: FieldPath) -> MemoIndex | None:
        """The memo index on ``path`` if one exists."""
        return self.memos.get(path)

    def ensure_memo(self, path: str | FieldPath, source: DocSource) -> MemoIndex:
        """The memo index on ``path``, built from ``source`` the first time; O(n log n) once.

        AMPS builds a memo index the first time a query needs a field and keeps
        it up to date afterwards; this does the same.
        """
        parsed = as_path(path)
        index = self.memos.get(parsed)
        if index is None:
            index = MemoIndex(parsed)
            for key in source.keys():  # noqa: SIM118 (a source, not a dict)  # noqa: SIM118 (a source, not a dict)
                index.add(key, source.doc(key))
            self.memos[parsed] = index
        return index

    def rebuild(self, source: DocSource) -> None:
        """Clear and refill every index from ``source``; O(n) per index."""
        self.clear()
        for key in source.keys():  # noqa: SIM118 (a source, not a dict)
            self.on_put(key, None, source.doc(key))

    def clear(self) -> None:
        """Empty every index (the topic was cleared); memo indexes stay defined."""
        self._live = 0
        self.irregular.clear()
        for index in self._all():
            index.clear()

    def names(self) -> list[str]:
        """Names of every index, hash indexes first: ``['hash(/a)', 'memo(/b)']``."""
        return [index.name for index in self._all()]
