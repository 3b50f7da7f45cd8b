"""Moving sharded stores between a local directory and a root URL, in one call each.

``upload_sharded`` takes a store built on one machine (a sharded store of
``shard-NNNN`` folders, or a plain SOW store, split into shards on the way);
``download_sharded`` writes a versioned store's latest commit as a local sharded
store that :func:`sowlib.spark.shards.open_sharded` opens. Imports ``sowlib.store``,
``sowlib.errors`` and the ``.routing``, ``.versions`` and ``.shardwriter`` modules;
never pyspark.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sowlib.errors import ConfigError
from sowlib.paths import parse_path
from sowlib.spark.routing import shard_of
from sowlib.spark.shardwriter import ShardWriter
from sowlib.spark.versions import ShardedStore, shard_name
from sowlib.store import SowStore

__all__ = ["download_sharded", "upload_sharded"]

#: The plain (shared-filesystem) layout's description file.
PLAIN_META = "_sharded.json"
_CHUNK = 5_000


def upload_sharded(
    local: str | os.PathLike[str],
    root: str,
    *,
    topic: str | None = None,
    shards: int = 1,
    storage_options: Mapping[str, Any] | None = None,
) -> ShardedStore:
    """Upload a store built on this machine to ``root`` as a new versioned sharded store.

    ``local`` is either a sharded store (``write_sharded`` to a local path: each
    shard is uploaded as it is) or a plain SOW store, whose ``topic`` is split into
    ``shards`` shards by :func:`~sowlib.spark.routing.shard_of` over its key fields
    first. The store's first commit lists every shard, so readers see all or none.

    Raises:
        ConfigError: ``root`` already holds a store, ``local`` holds no such topic
            (or a plain store is given without ``topic``), or the topic has no keys.
        StoreNotFoundError: no store at ``local``.
    """
    folder = os.path.abspath(os.fspath(local))
    meta_file = os.path.join(folder, PLAIN_META)
    if os.path.isfile(meta_file):
        with open(meta_file, encoding="utf-8") as fh:
            meta = json.load(fh)
        dirs = [os.path.join(folder, shard_name(i)) for i in range(int(meta["shards"]))]
        return _upload_dirs(dirs, root, meta, storage_options)
    if topic is None:
        raise ConfigError("topic", "name the topic of a plain store to upload")
    with SowStore(folder, readonly=True) as store, tempfile.TemporaryDirectory() as tmp:
        source = store.topic(topic)
        keys = list(source.config.keys)
        if not keys:
            raise ConfigError("keys", f"topic {topic!r} has no key fields to shard by")
        meta = {
            "shards": shards,
            "topic": topic,
            "keys": keys,
            "message_type": source.message_type,
        }
        dirs = _split(source, keys, shards, tmp)
        return _upload_dirs(dirs, root, meta, storage_options)


def _split(source: Any, keys: list[str], shards: int, tmp: str) -> list[str]:
    """Publish every record of ``source`` into one of ``shards`` local stores."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ConfigError("shards", f"{shards!r} is not a positive shard count")
    paths = [parse_path(k) for k in keys]
    dirs = [os.path.join(tmp, shard_name(i)) for i in range(shards)]
    outs = [SowStore(d) for d in dirs]
    try:
        topics = [
            o.create_topic(source.name, message_type=source.message_type, keys=keys) for o in outs
        ]
        pending: list[list[bytes]] = [[] for _ in dirs]
        for rec in source.sow():
            shard = shard_of([p.resolve(rec.doc) for p in paths], shards)
            pending[shard].append(rec.data)
            if len(pending[shard]) >= _CHUNK:
                topics[shard].publish_many(pending[shard])
                pending[shard] = []
        for topic, rows in zip(topics, pending, strict=True):
            if rows:
                topic.publish_many(rows)
    finally:
        for o in outs:
            o.close()
    return dirs


def _upload_dirs(
    dirs: Sequence[str],
    root: str,
    meta: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
) -> ShardedStore:
    store = ShardedStore.create(
        root,
        str(meta["topic"]),
        shards=len(dirs),
        keys=list(meta["keys"]),
        message_type=str(meta.get("message_type", "json")),
        storage_options=storage_options,
    )
    tag = f"upload-{uuid.uuid4().hex}"
    updates = {}
    for shard, folder in enumerate(dirs):
        if not os.path.isdir(folder):
            raise ConfigError(folder, "shard missing")
        writer = ShardWriter(store, shard, 0, tag, source=folder)
        with writer:
            updates[shard] = writer.commit()
    store.commit(updates, base=store.latest())
    return store


def download_sharded(
    root: str,
    local: str | os.PathLike[str],
    *,
    version: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write store version ``version`` (default: the latest) of ``root`` to ``local``
    as a local sharded store (``shard-NNNN`` folders and ``_sharded.json``).

    Returns the shard folders, in shard order.

    Raises:
        ConfigError: ``local`` exists and is not empty.
        StoreNotFoundError: no store (or no such version) at ``root``.
    """
    folder = os.path.abspath(os.fspath(local))
    if os.path.isdir(folder) and os.listdir(folder):
        raise ConfigError(folder, "download into a new or empty directory")
    store = ShardedStore(root, storage_options=storage_options)
    commit = store.latest() if version is None else store.commit_at(version)
    os.makedirs(folder, exist_ok=True)
    out = []
    for shard, shard_version in enumerate(commit.shards):
        target = os.path.join(folder, shard_name(shard))
        shutil.copytree(store.checkout(shard, shard_version), target)
        out.append(target)
    meta = {
        "shards": store.shards,
        "topic": store.topic,
        "keys": store.keys,
        "message_type": store.message_type,
    }
    with open(os.path.join(folder, PLAIN_META), "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
    return out
