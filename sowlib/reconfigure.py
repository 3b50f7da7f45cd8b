"""Reopening a persistent topic with an edited configuration: what may change, and how.

AMPS users edit the configuration and restart. Indexes, expiration, the history
window and storage tuning may change (the next open uses them); the key fields,
key domain, key generator, message type, file name and transient/persistent
durability may not, since the stored keys and file depend on them. Imports
``errors``, ``config`` and ``storage`` only.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from sowlib.config import TopicConfig
from sowlib.errors import ConfigError
from sowlib.storage import AppendLog

__all__ = ["CHANGEABLE", "config_changes", "rewrite_topic_header"]

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
}
_FIXED = {
    "keys": "key fields",
    "key_domain": "key domain",
    "message_type": "message type",
    "file_name": "file name",
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
