"""A publish_many batch made ready to append: payloads, keys and, when needed, documents.

Every message is validated before anything is written. Functions over what a
:class:`BatchWriter` offers (the topic's ``Writer`` is one). Imports ``errors``,
``index``, ``keys`` and the sibling ``views``; never the writer or the facade.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

import attrs

from sowlib.errors import ArgumentError, SowError
from sowlib.index import IndexSet
from sowlib.index.types import Key
from sowlib.keys import ContentKeyGenerator
from sowlib.topic.views import Views

__all__ = ["Batch", "BatchWriter", "prepare_batch"]


class BatchWriter(Protocol):
    """What preparing a batch reads from the topic's writer."""

    content: ContentKeyGenerator | None
    indexes: IndexSet
    views: Views

    def decode_input(self, data: object) -> tuple[bytes, Any]: ...

    def key(self, doc: Any, sow_key: str | None, data: object) -> Key: ...


@attrs.define
class Batch:
    """A validated batch: one key and one payload per message, in order.

    ``docs`` holds the decoded documents when the indexes need field values (or
    the keys needed parsing); otherwise ``key_values`` holds each message's
    key-field values (for the key-field bookkeeping) and no document is kept.
    ``columns``, when set, holds the values of the index set's paths read out of the
    payloads (a column per path, as ``IndexSet.columns`` gives them from the documents):
    then no document was decoded (``docs`` and ``key_values`` are None).
    """

    keys: list[Key]
    payloads: list[bytes]
    docs: list[Any] | None
    key_values: list[Sequence[Any]] | None
    columns: list[list[Any]] | None = None


def prepare_batch(
    writer: BatchWriter,
    messages: Sequence[object],
    key_values: Sequence[Any] | None,
    *,
    docs_wanted: bool = True,
) -> Batch:
    """Decode and key every message of a batch (raising the first error, nothing written).

    Content-keyed topics take C-level paths: the keys are hashed from ``key_values``
    (trusted: what the messages hold) or from the key field read out of each
    message, and documents are decoded only when an index needs them. When the caller
    needs no document (``docs_wanted`` False: only the index set's values) and every
    path the index set reads is a top-level field the codec reads out of the bytes
    (``top_columns``), the key field and those values are read in one pass with no
    document made (``Batch.columns``); equal to decoding (``tests/test_publish_batch.py``).
    """
    if key_values is not None and (
        isinstance(key_values, str | bytes) or not isinstance(key_values, Sequence)
    ):
        raise ArgumentError("key_values", key_values, "a list with one entry per message")
    if key_values is not None and len(key_values) != len(messages):
        raise ArgumentError(
            "key_values", len(key_values), f"expected one per message ({len(messages)})"
        )
    content = writer.content
    kinds = set(map(type, messages))
    if content is None or not (kinds <= {bytes} or kinds <= {str}):
        return _one_by_one(writer, messages)
    payloads = (
        list(cast("Sequence[bytes]", messages))
        if kinds <= {bytes}
        else [m.encode() for m in cast("Sequence[str]", messages)]
    )
    needs_docs = writer.indexes.has_field_indexes
    single = len(content.fields) == 1
    hashes: list[int] | None = None
    values: list[Sequence[Any]] | None = None
    if key_values is not None:
        if single:
            hashes = content.hashes_of_values(key_values)
            values = [(v,) for v in key_values]
        else:
            values = [tuple(v) for v in key_values]
            texts = [content.key_for_values(v) for v in values]
            hashes = None if None in texts else [int(cast(str, t)) for t in texts]
    top_values = getattr(writer.views.codec, "top_values", None)
    if hashes is None and not needs_docs and content.top_field is not None and top_values:
        got = top_values(payloads, content.top_field)
        hashes = None if got is None else content.hashes_of_values(got)
        values = None if got is None else [(v,) for v in got]
    if hashes is None and needs_docs and not docs_wanted and content.top_field is not None:
        read = _index_columns(writer, payloads, content)
        if read is not None:
            return Batch(cast("list[Key]", read[0]), payloads, None, None, read[1])
    docs: list[Any] | None = None
    if hashes is None or needs_docs:
        try:
            docs = writer.views.decode_many(payloads)
            if hashes is None:
                hashes = content.hashes_of(docs)
        except SowError:
            return _one_by_one(writer, messages)  # raises the first error with its context
    return Batch(cast("list[Key]", hashes), payloads, docs, values if docs is None else None)


def _index_columns(
    writer: BatchWriter, payloads: list[bytes], content: ContentKeyGenerator
) -> tuple[list[int], list[list[Any]]] | None:
    """The keys of ``payloads`` and the values of the index set's paths (a column per
    path), read out of the bytes in one pass; None when the codec cannot (a path that is
    not a top-level field, a message outside what its ``top_columns`` reads, a key value
    that is not an int or non-empty text): then the documents are decoded."""
    views = writer.views
    top = getattr(views.codec, "top_columns", None) if views.filterable else None
    names = writer.indexes.top_names
    field = content.top_field
    if top is None or field is None or None in names:
        return None
    wanted = cast("tuple[str, ...]", names)
    if field not in wanted:
        wanted = (*wanted, field)
    columns: list[list[Any]] | None = top(payloads, wanted)
    if columns is None:
        return None
    hashes = content.hashes_of_values(columns[wanted.index(field)])
    if hashes is None:
        return None
    return hashes, columns[: len(names)]


def _one_by_one(writer: BatchWriter, messages: Sequence[object]) -> Batch:
    keys: list[Key] = []
    payloads: list[bytes] = []
    docs: list[Any] = []
    for data in messages:
        payload, doc = writer.decode_input(data)
        keys.append(writer.key(doc, None, data))
        payloads.append(payload)
        docs.append(doc)
    return Batch(keys, payloads, docs, None)
