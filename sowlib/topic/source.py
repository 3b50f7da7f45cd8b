"""The topic as the query engine reads it (:class:`~sowlib.query.QuerySource`).

Imports ``expr``, ``index``, ``paths``, ``record`` and sibling modules; never the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sowlib.columns import ColumnPlan, column_plan
from sowlib.expr import EvalContext
from sowlib.expr.nodes import Node
from sowlib.index import IndexSet
from sowlib.index.planner import Plan
from sowlib.index.rawscan import json_patterns
from sowlib.index.types import Key
from sowlib.keys import ContentKeyGenerator
from sowlib.paths import FieldPath
from sowlib.record import Record
from sowlib.topic.bytescan import byte_plan
from sowlib.topic.fieldread import mapped_columns
from sowlib.topic.keymap import KeyMap
from sowlib.topic.slots import new_slots
from sowlib.topic.views import Views

if TYPE_CHECKING:
    from sowlib.columns.store import ColumnStore

__all__ = ["TopicSource"]


class TopicSource:
    """What :func:`sowlib.query.run_query` and the planner call; under the topic's lock.

    Args:
        views: records and documents of live keys.
        keys: the key map.
        indexes: the topic's indexes.
        key_fields: the topic's key fields.
        content: the content key generator when keys are content keys.
        clock: the topic's clock (context functions).
    """

    def __init__(
        self,
        views: Views,
        keys: KeyMap,
        indexes: IndexSet,
        key_fields: tuple[FieldPath, ...],
        content: ContentKeyGenerator | None,
        clock: Callable[[], float],
    ) -> None:
        self.name = views.name
        self.message_type = views.message_type
        self.key_fields = key_fields
        self._indexes = indexes
        self._views = views
        self._keys = keys
        self._content = content
        self._clock = clock
        #: The plans ``run_query`` keeps by filter text (see ``query.pipeline``).
        self.plans: dict[str, tuple[tuple[int, ...], Plan]] = {}

    @property
    def indexes(self) -> IndexSet:
        """The topic's indexes, the upkeep a read-only topic's refresh left waiting done
        first (``IndexSet.settle``)."""
        self._indexes.settle()
        return self._indexes

    def keys(self) -> Iterator[Key]:
        """Every live key (a snapshot); O(1) per key."""
        return iter(self._keys.keys())

    def __len__(self) -> int:
        return len(self._keys)

    def record(self, key: Key) -> Record | None:
        """The live record of ``key``, or None."""
        return self._views.record(key)

    def records_of(self, keys: Iterable[Key]) -> list[Record]:
        """The live records of ``keys``, in order, absent keys left out."""
        return self._views.records(keys)

    def field_columns(self, payloads: list[bytes], paths: Sequence[FieldPath]) -> list[list[Any]]:
        """The value of each of ``paths`` in each payload (a column per path), as
        ``path.getter`` of the decoded document gives it; no document is kept.

        Top-level fields of a codec that reads them out of the bytes (``top_columns``:
        JSON through the optional C module) are read without decoding; anything else,
        or a payload outside what that reads, decodes the batch.
        """
        views = self._views
        top = getattr(views.codec, "top_columns", None) if views.filterable else None
        if top is not None and _top_level(paths):
            got: list[list[Any]] | None = top(payloads, [p.steps[0].name for p in paths])
            if got is not None:
                return got
        docs = views.decode_many(payloads)
        return [list(map(p.getter, docs)) for p in paths]

    def kept_columns(
        self, keys: Sequence[Key], paths: Sequence[FieldPath]
    ) -> list[list[Any]] | None:
        """The value of each of ``paths`` for each of the live ``keys`` (a column per path)
        as the index set keeps them (what ``path.getter`` gave when the record was
        written), or None when it does not keep them all."""
        indexes = self.indexes
        if not indexes.values_known:
            return None
        kept = dict(indexes.kept_tables())
        if not all(p in kept for p in paths):
            return None
        try:
            return [list(map(kept[p].__getitem__, keys)) for p in paths]
        except KeyError:
            return None  # a key that is not live

    def doc(self, key: Key) -> Any:
        """The document of a live key."""
        return self._views.doc(key)

    def docs(self, keys: Iterable[Key]) -> Iterable[tuple[Key, Any]]:
        """``(key, document)`` of each live key, read in batches; nothing kept."""
        return self._views.docs(keys)

    def field_values(self, path: FieldPath) -> Iterator[tuple[Key, Any]]:
        """``(key, value of path)`` of every live record; documents dropped at once."""
        return self._views.field_values(path)

    def scan(self) -> Iterator[tuple[Key, Any]]:
        """``(key, document)`` of every live record, in file order; nothing is kept."""
        return self._views.all_docs()

    def byte_plan(self, node: Node) -> tuple[int, Callable[[], list[Key]]] | None:
        """A search of the log's raw bytes for ``node``'s equality clauses (JSON topics
        in a file), or None (see :mod:`sowlib.topic.bytescan`)."""
        if self.message_type != "json":
            return None
        patterns = json_patterns(node)
        return byte_plan(self._views.log, self._keys, patterns) if patterns else None

    def field_chunks(
        self, paths: Sequence[FieldPath]
    ) -> Iterator[tuple[list[Key], list[Sequence[Any]]]]:
        """Every live key with the value of each of ``paths`` (a column per path), a batch
        at a time in file order; what an index keeps per key is taken from there, the
        rest read out of the records once (:meth:`field_columns`); nothing is kept."""
        indexes = self.indexes
        kept = dict(indexes.kept_tables()) if indexes.values_known else {}
        read = [p for p in paths if p not in kept]
        for keys, offsets in self._views.live_chunks():
            got = iter(self._columns_at(offsets, read) if read else ())
            yield (
                keys,
                [list(map(kept[p].__getitem__, keys)) if p in kept else next(got) for p in paths],
            )

    def _columns_at(
        self, offsets: list[int], paths: Sequence[FieldPath]
    ) -> Sequence[Sequence[Any]]:
        """:meth:`field_columns` of the records at ``offsets``: top-level JSON fields read
        where the records lie in the mapped file (:mod:`sowlib.topic.fieldread`), else
        from their payloads."""
        views = self._views
        if self.message_type == "json" and views.filterable and _top_level(paths):
            got = mapped_columns(views.log, offsets, [p.steps[0].name for p in paths])
            if got is not None:
                return got
        return self.field_columns(list(views.log.payloads(offsets)), paths)

    def column_plan(self, node: Node, scanned: Callable[[FieldPath], bool]) -> ColumnPlan | None:
        """The live keys matching ``node`` read off in-memory columns of its fields (JSON
        topics; see :mod:`sowlib.columns`), or None."""
        if self.message_type != "json":
            return None
        return column_plan(self.indexes, self, node, scanned, self._column_store)

    def _column_store(self) -> ColumnStore:
        # content keys: rows found through a C key table where built, keys unboxed
        from sowlib.columns.store import ColumnStore  # numpy: only once a plan needs it

        content = self._content is not None
        return ColumnStore(new_slots(content), int_keys=content)

    def key_for_values(self, values: Sequence[Any]) -> Key | None:
        """The key content-keyed messages with these key-field values get."""
        if self._content is None:
            return None
        text = self._content.key_for_values(values)
        return None if text is None else self._keys.key_of(text)

    def encode(self, doc: Any) -> bytes:
        """Encode a document in this topic's message type."""
        return self._views.codec.encode(doc)

    def context(self, key: Key, record: Record | None = None) -> EvalContext:
        """The evaluation context for context functions such as SOW_KEY()."""
        rec = record if record is not None else self.record(key)
        text = self._keys.text_of(key)
        if rec is None:
            return EvalContext(sow_key=text, topic=self.name, now=self._clock())
        return EvalContext(
            sow_key=text,
            topic=self.name,
            message_size=len(rec.data),
            correlation_id=rec.correlation_id.decode("utf-8", "replace") or None,
            timestamp=rec.timestamp,
            seq=rec.seq,
            now=self._clock(),
        )


def _top_level(paths: Sequence[FieldPath]) -> bool:
    return all(len(p.steps) == 1 and p.steps[0].index is None for p in paths)
