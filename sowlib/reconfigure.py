"""Reopening a persistent topic with an edited configuration: what may change, and how.

AMPS users edit the configuration and restart. Indexes, expiration, the history
window, storage tuning and the recorded file name may change (the next open uses
them); the key fields, key domain, key generator, message type and
transient/persistent durability may not, since the stored keys and file depend on them. Imports
``errors``, ``config``, ``keys``, ``storage`` and ``journal.bookmarks`` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from sowlib.config import TopicConfig
from sowlib.errors import ConfigError, QueryOptionError
from sowlib.journal.bookmarks import parse_bookmark
from sowlib.keys import load_key_generator
from sowlib.storage import AppendLog

__all__ = [
    "CHANGEABLE",
    "check_message_types",
    "check_recovery_point",
    "config_changes",
    "reopen_with",
    "rewrite_topic_header",
    "store_dir_for",
    "trusted_generator",
]

#: Fields a restart may change, with the words used in messages.
CHANGEABLE = {
    "hash_indexes": "hash indexes",
    "indexes": "memo indexes",
    "expiration_enabled": "expiration",
    "default_ttl": "expiration",
    "history_window": "history window",
    "history_granularity": "history granularity",
    "auto_compact": "automatic compaction",
    "slab_size": "slab size",
    # The store finds a topic's file by scanning its directory, so a moved store or an
    # edited FileName keeps using the file it has (the new name is recorded).
    "file_name": "file name",
}
_FIXED = {
    "keys": "key fields",
    "key_domain": "key domain",
    "message_type": "message type",
}
_DURABLE = frozenset({"persistent", "sync"})


def _generator_spec(config: TopicConfig) -> Any:
    return config.options.get("key_generator")


def config_changes(stored: TopicConfig, wanted: TopicConfig) -> tuple[str, ...]:
    """The changeable fields that differ between ``stored`` and ``wanted``.

    Raises:
        ConfigError: a field that cannot change on a stored topic differs; the
            message says what changed and what to do.

    Example:
        >>> old = TopicConfig.make("t", keys=["/id"])
        >>> config_changes(old, TopicConfig.make("t", keys=["/id"], indexes=["/px"]))
        ('indexes',)
    """
    fixed: list[str] = []
    for name, words in _FIXED.items():
        before, after = getattr(stored, name), getattr(wanted, name)
        if before != after:
            fixed.append(f"{words} {before!r} -> {after!r}")
    if _generator_spec(stored) != _generator_spec(wanted):
        fixed.append("key generator")
    if stored.durability != wanted.durability and {stored.durability, wanted.durability} - _DURABLE:
        fixed.append(f"durability {stored.durability!r} -> {wanted.durability!r}")
    if fixed:
        raise ConfigError(
            f"SOW/Topic[{wanted.name}]",
            f"the stored topic cannot change its {'; '.join(fixed)}: its keys and file depend"
            " on them. Restore the old setting, or export the records (sowlib dump), remove"
            " the topic's file and publish them again under the new configuration",
        )
    changed = [
        f.name
        for f in attrs.fields(TopicConfig)
        if f.name in CHANGEABLE and getattr(stored, f.name) != getattr(wanted, f.name)
    ]
    if stored.durability != wanted.durability:
        changed.append("durability")
    return tuple(changed)


def rewrite_topic_header(path: str, config: TopicConfig, fs: Any = None) -> None:
    """Store ``config`` in the header of the closed topic file ``path``; O(file size).

    The records are copied unchanged (a compaction that keeps every record), so the
    file is replaced atomically and a crash leaves either the old or the new header.
    """
    log = AppendLog(path, slab_size=config.slab_size, sync=config.durability == "sync", fs=fs)
    try:
        log.compact(lambda _record: True, meta=json.dumps(config.to_dict()).encode())
    finally:
        log.close()


def store_dir_for(
    source: str | os.PathLike[str] | bytes,
    base_dir: str | os.PathLike[str] | None,
    configs: Sequence[TopicConfig],
) -> str | os.PathLike[str] | None:
    """The directory ``SowStore.from_config`` opens: never silently memory-only.

    ``base_dir`` when given; else the configuration file's directory (where its
    relative ``FileName`` values point) when a topic is persistent; else None
    (every topic is transient: a memory store).

    Raises:
        ConfigError: XML text (not a file) with persistent topics and no ``base_dir``.
    """
    if base_dir is not None or all(c.durability == "transient" for c in configs):
        return base_dir
    if isinstance(source, bytes) or (isinstance(source, str) and source.lstrip().startswith("<")):
        names = ", ".join(sorted({c.name for c in configs if c.durability != "transient"}))
        raise ConfigError(
            "base_dir",
            f"persistent topics ({names}) need a directory: pass base_dir=, or give the"
            " configuration as a file (its directory is used), or make them transient",
        )
    return os.path.dirname(os.path.abspath(os.fspath(source)))


def check_message_types(
    stored: Iterable[Any], configs: Sequence[TopicConfig]
) -> Sequence[TopicConfig]:
    """Refuse a configuration that changes the message type of a stored topic.

    ``stored`` are the topics found in the store directory. A stored topic whose
    name the configuration defines only with another message type was retyped.

    Returns:
        ``configs``, for use in a loop.

    Raises:
        ConfigError: naming the topic, both types and what to do.
    """
    wanted: dict[str, set[str]] = {}
    for config in configs:
        wanted.setdefault(config.name, set()).add(config.message_type)
    for topic in stored:
        types = wanted.get(topic.name)
        if types and topic.message_type not in types:
            raise ConfigError(
                f"SOW/Topic[{topic.name}]/MessageType",
                f"the stored topic is {topic.message_type}, the configuration says"
                f" {'/'.join(sorted(types))}: a stored topic cannot change its message type."
                " Restore the old type, or export the records (sowlib dump), remove the"
                " topic's file and publish them again",
            )
    return configs


def reopen_with(
    topic: Any, config: TopicConfig, open_file: Callable[[str], Any], fs: Any = None
) -> Any:
    """``topic`` (opened from its file) under the edited ``config``.

    The same topic when nothing changed; else the topic is closed, its file's
    header rewritten with ``config`` and the file opened again by ``open_file``.

    Raises:
        ConfigError: a change the stored topic cannot take (:func:`config_changes`).
    """
    if topic.config == config:
        return topic
    config_changes(topic.config, config)
    path = str(topic.stats()["path"])
    topic.close()
    rewrite_topic_header(path, config, fs)
    return open_file(path)


def check_recovery_point(config: TopicConfig) -> None:
    """Validate a topic's ``RecoveryPoint`` (``options["recovery_point"]``).

    ``now``, ``epoch``, a transaction-log bookmark (``id|seq|``) or a timestamp;
    a journal refills an empty topic from it (``sowlib.journal``).

    Raises:
        ConfigError: any other value.
    """
    point = config.options.get("recovery_point")
    if point is None:
        return
    text = str(point)
    head = text.split("|", 1)[0]
    try:
        parse_bookmark(text, int(head) if "|" in text and head.isdigit() else 0)
    except QueryOptionError as exc:
        raise ConfigError(
            "RecoveryPoint", f"{text!r}: expected now, epoch, a bookmark or a time ({exc.reason})"
        ) from None


def trusted_generator(config: TopicConfig) -> TopicConfig:
    """A config from the application's XML with its ``KeyGenerator`` built (the
    XML is trusted: a named module is imported here, and only here)."""
    spec = config.options.get("key_generator")
    if spec is None or config.key_generator is not None:
        return config
    generator = load_key_generator(spec, domain=config.domain, topic=config.name)
    return attrs.evolve(config, key_generator=generator)
