"""The parts one topic is composed of, wired together (and the as-of view of history).

Imports ``codecs``, ``config``, ``index``, ``keys``, ``subscriptions``, ``history`` and
sibling modules; never the facade.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from sowlib.codecs import get_codec
from sowlib.config import TopicConfig
from sowlib.errors import ArgumentError, UnsupportedOperationError
from sowlib.history import HistoricalSource, History, Version
from sowlib.index import IndexSet
from sowlib.index.types import Key
from sowlib.keys import ContentKeyGenerator
from sowlib.paths import FieldPath, parse_path
from sowlib.record import Record
from sowlib.results import parse_bookmark
from sowlib.storage import Log
from sowlib.subscriptions import SubscriptionManager
from sowlib.topic.cache import DEFAULT_CACHE_BYTES, RecordCache
from sowlib.topic.expiry import Expiry
from sowlib.topic.keymap import KeyMap
from sowlib.topic.logview import LogView
from sowlib.topic.slots import new_table
from sowlib.topic.source import TopicSource
from sowlib.topic.views import Views
from sowlib.topic.writer import Writer

__all__ = ["Parts", "as_of", "build_parts", "int_key_format", "key_head", "key_of_values"]


@attrs.define(eq=False)
class Parts:
    """Everything a topic holds, each part owning its own state."""

    log: Log  # the AppendLog (or MemoryLog) itself
    reads: LogView
    keys: KeyMap
    cache: RecordCache
    views: Views
    indexes: IndexSet
    key_fields: tuple[FieldPath, ...]
    subs: SubscriptionManager
    expiry: Expiry
    history: History | None
    writer: Writer
    source: TopicSource
    content: ContentKeyGenerator | None


def build_parts(
    config: TopicConfig,
    log: Log,
    clock: Callable[[], float],
    key_generator: Callable[[Any], str] | None,
    cache_bytes: int | None,
) -> Parts:
    """Wire a topic's parts over ``log`` (nothing is read yet).

    Raises:
        QueryOptionError: ``cache_bytes`` is not a number of bytes >= 0.
    """
    budget = DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ArgumentError("cache_bytes", cache_bytes, "a number of bytes >= 0")
    codec = get_codec(config.message_type, **dict(config.options.get("codec", {})))
    keygen = key_generator or (
        ContentKeyGenerator(config.keys, domain=config.domain, topic=config.name)
        if config.keys
        else None
    )
    content = keygen if isinstance(keygen, ContentKeyGenerator) else None
    key_fields = tuple(parse_path(k) for k in config.keys)
    reads = LogView(log)
    keys = KeyMap(reads, content=content is not None)
    cache = RecordCache(budget)
    views = Views(config.name, config.message_type, codec, keys, reads, cache)
    table = functools.partial(new_table, content is not None)
    indexes = IndexSet(key_fields, config.hash_indexes, config.indexes, table)
    subs = SubscriptionManager(config.name, config.message_type, codec.encode, keys=config.keys)
    expiry = Expiry(config.expiration_enabled)
    history = (
        History(config.history_window, config.history_granularity)
        if config.history_window is not None
        else None
    )
    writer = Writer(config, views, indexes, expiry, history, subs, clock, keygen, key_fields)
    source = TopicSource(views, keys, indexes, key_fields, content, clock)
    return Parts(
        log,
        reads,
        keys,
        cache,
        views,
        indexes,
        key_fields,
        subs,
        expiry,
        history,
        writer,
        source,
        content,
    )


def key_head(content: ContentKeyGenerator | None) -> bytes | None:
    """``content.head`` when a key is one field (its value's text follows it); None for
    other keys."""
    return content.head if content is not None and len(content.fields) == 1 else None


def int_key_format(content: ContentKeyGenerator | None) -> bytes | None:
    """``content.int_format`` when a key is one field: ``format % n`` is what the key of
    the int ``n`` hashes; None for other keys.

    The reference is ``content.hashes_of_values([n])``; the tests check they agree.
    """
    return content.int_format if content is not None and len(content.fields) == 1 else None


def key_of_values(parts: Parts, topic: str, key_values: Sequence[Any]) -> Key | None:
    """The in-memory key of a record whose key fields hold ``key_values`` (in key
    order), or None (a NULL value): ``Topic.lookup``'s general path.

    Raises:
        UnsupportedOperationError: the topic's keys are not content keys.
        QueryOptionError: not one value per key field.
    """
    content = parts.content
    if content is None:
        raise UnsupportedOperationError(
            "lookup", f"topic {topic!r} has no content keys; use get(sow_key)"
        )
    if len(key_values) != len(parts.key_fields):
        raise ArgumentError(
            "key_values", key_values, f"expected {len(parts.key_fields)} values in key order"
        )
    if len(key_values) == 1:
        # One int or non-empty text: hashed in one C-level step.
        hashed = content.hashes_of_values(key_values)
        if hashed is not None:
            return hashed[0]
    text = content.key_for_values(key_values)
    return None if text is None else parts.keys.key_of(text)


def as_of(parts: Parts, bookmark: int | float | str | datetime, now: float) -> HistoricalSource:
    """The topic as it was at ``bookmark`` (a history topic's query source)."""
    history = parts.history
    assert history is not None
    seq, stamp = parse_bookmark(bookmark)
    history.trim(now)
    versions = list(history.as_of(seq, stamp, now))
    log, of_log = parts.log, parts.views.of_log

    def make(key: Key, v: Version) -> Record:
        assert v.offset is not None
        return of_log(log.read(v.offset))

    return HistoricalSource(parts.source, versions, make)
