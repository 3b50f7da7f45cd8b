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
    """

    keys: list[Key]
    payloads: list[bytes]
    docs: list[Any] | None
    key_values: list[Sequence[Any]] | None


def prepare_batch(
    writer: BatchWriter, messages: Sequence[object], key_values: Sequence[Any] | None
) -> Batch:
    """Decode and key every message of a batch (raising the first error, nothing written).

    Content-keyed topics take C-level paths: the keys are hashed from ``key_values``
    (trusted: what the messages hold) or from the key field read out of each
    message, and documents are decoded only when an index needs them.
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
    docs: list[Any] | None = None
    if hashes is None or needs_docs:
        try:
            docs = writer.views.decode_many(payloads)
            if hashes is None:
                hashes = content.hashes_of(docs)
        except SowError:
            return _one_by_one(writer, messages)  # raises the first error with its context
    return Batch(cast("list[Key]", hashes), payloads, docs, values if docs is None else None)


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
