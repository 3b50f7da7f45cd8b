"""An in-memory :class:`sowlib.query.QuerySource` for index and query tests.

It keeps documents in a dict, derives SOW keys from key fields with canonical
text (spec §6.3, §19 #10) and maintains an :class:`IndexSet` on every write,
as the real Topic does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sowlib.document import canonical_text
from sowlib.index import IndexSet
from sowlib.paths import FieldPath, parse_path
from sowlib.query import Record


def compile_filter(text: str) -> Any:
    """The filter language's compiler (imported late: it is built alongside)."""
    from sowlib.expr import compile_filter as real

    return real(text)


class FakeSource:
    """A topic without storage: dict of documents + an IndexSet."""

    def __init__(
        self,
        keys: Sequence[str] = (),
        hash_indexes: Sequence[Sequence[str]] = (),
        memo: Sequence[str] = (),
        name: str = "orders",
    ) -> None:
        self.name = name
        self.message_type = "json"
        self.key_fields: tuple[FieldPath, ...] = tuple(parse_path(k) for k in keys)
        self.indexes = IndexSet(keys, hash_indexes, memo)
        self._docs: dict[str, Any] = {}
        self._seq: dict[str, int] = {}
        self._next = 0
        self.record_calls = 0

    # -- writes --------------------------------------------------------------

    def key_of(self, doc: Any) -> str:
        values = [f.resolve(doc) for f in self.key_fields]
        key = self.key_for_values(values)
        if key is None or any(canonical_text(v) is None for v in values):
            raise ValueError(f"no key for {doc!r}")
        return key

    def publish(self, doc: Any, sow_key: str | None = None) -> str:
        key = sow_key if sow_key is not None else self.key_of(doc)
        old = self._docs.get(key)
        self._docs[key] = doc
        self._next += 1
        self._seq[key] = self._next
        self.indexes.on_put(key, old, doc)
        return key

    def delete(self, key: str) -> bool:
        old = self._docs.pop(key, None)
        if old is None:
            return False
        del self._seq[key]
        self.indexes.on_delete(key, old)
        return True

    # -- QuerySource ---------------------------------------------------------

    def keys(self) -> Iterable[Any]:
        return self._docs.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs)

    def __len__(self) -> int:
        return len(self._docs)

    def record(self, key: Any) -> Record | None:
        self.record_calls += 1
        doc = self._docs.get(key)
        if doc is None:
            return None
        return Record(
            sow_key=key,
            data=self.encode(doc),
            seq=self._seq[key],
            timestamp=1_700_000_000.0 + self._seq[key],
            expiration=None,
            topic=self.name,
            message_type=self.message_type,
            doc=doc,
        )

    def doc(self, key: Any) -> Any:
        return self._docs[key]

    def docs(self, keys: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        for key in keys:
            doc = self._docs.get(key)
            if doc is not None:
                yield key, doc

    def scan(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._docs.items()))

    def field_values(self, path: FieldPath) -> Iterator[tuple[Any, Any]]:
        for key, doc in self._docs.items():
            yield key, path.getter(doc)

    def byte_plan(self, node: Any) -> None:
        return None  # documents in memory: no bytes to search

    def key_for_values(self, values: Sequence[Any]) -> Any:
        if not self.key_fields:
            return None
        return "|".join(str(canonical_text(v)) for v in values)

    def encode(self, doc: Any) -> bytes:
        return json.dumps(doc, sort_keys=True).encode()

    def context(self, key: Any) -> Any:
        return None
