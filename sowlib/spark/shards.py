"""Sharded stores: one SOW store per shard (``shard-0000`` ...), each written by one Spark task.

A record lives in shard ``shard_of(key values, N)``. Imports pyspark, ``sowlib.store``,
``sowlib.paths``, ``sowlib.document``, ``sowlib.errors``, ``sowlib.progress`` and
``sowlib.spark.jobs``; never ``storage``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sowlib.errors import ConfigError
from sowlib.paths import parse_path
from sowlib.progress import ProgressArg, reporter
from sowlib.spark.jobs import run_with_progress
from sowlib.spark.remote import is_url
from sowlib.spark.routing import shard_of
from sowlib.spark.shardwriter import ShardWriter
from sowlib.spark.versions import ShardedStore
from sowlib.spark.workers import worker_errors
from sowlib.store import SowStore

__all__ = [
    "MANIFEST",
    "is_sharded",
    "key_column",
    "open_sharded",
    "shard_name",
    "shard_of",
    "shard_paths",
    "write_sharded",
]

#: The file naming the shard count, topic and keys of a sharded store.
MANIFEST = "_sharded.json"
_SHARD = re.compile(r"shard-(\d{4,})\Z")
_CHUNK = 5_000


def shard_name(index: int) -> str:
    """The directory name of shard ``index``: ``shard-0003``."""
    return f"shard-{index:04d}"


def is_sharded(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a sharded store (it holds the :data:`MANIFEST`)."""
    return os.path.isfile(os.path.join(os.fspath(path), MANIFEST))


def shard_paths(path: str | os.PathLike[str]) -> list[str]:
    """The shard directories of a sharded store, in shard order.

    Raises:
        ConfigError: ``path`` is not a sharded store, or a shard is missing.
    """
    root = os.path.abspath(os.fspath(path))
    try:
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as fh:
            count = int(json.load(fh)["shards"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(root, f"not a sharded store ({MANIFEST}: {exc})") from None
    out = [os.path.join(root, shard_name(i)) for i in range(count)]
    missing = [p for p in out if not os.path.isdir(p)]
    if missing:
        raise ConfigError(root, f"shards missing: {missing!r}")
    return out


def open_sharded(
    path: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> list[SowStore]:
    """Every shard of a sharded store, opened read-only, in shard order.

    ``path`` is a local sharded store, or the URL of a versioned one: each shard is
    then a local copy at the latest commit's version (:meth:`ShardedStore.checkout`).

    Raises:
        ConfigError: not a sharded store.
        StoreNotFoundError: no versioned store at the URL.
    """
    if is_url(path):
        store = ShardedStore(os.fspath(path), storage_options=storage_options)
        commit = store.latest()
        return [store.open_shard(i, v) for i, v in enumerate(commit.shards)]
    return [SowStore(p, readonly=True) for p in shard_paths(path)]


def key_column(path_text: str) -> Column:
    """The (nested) column a key field path names; ConfigError for other paths."""
    steps = parse_path(path_text).steps
    if any(s.index is not None or s.name.startswith("@") for s in steps):
        raise ConfigError("keys", f"{path_text!r}: only plain field names map to columns")
    col = F.col(f"`{steps[0].name}`")
    for step in steps[1:]:
        col = col.getField(step.name)
    return col


def write_sharded(
    df: DataFrame,
    path: str | os.PathLike[str],
    topic: str,
    *,
    shards: int,
    keys: Sequence[str],
    message_type: str = "json",
    create_kwargs: Mapping[str, Any] | None = None,
    progress: ProgressArg = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write ``df`` as a new sharded store: each row a JSON message, each shard one task.

    Rows are routed by :func:`shard_of` over the key columns and partitioned so
    that partition ``i`` holds exactly shard ``i``. Each task writes its shard into
    a fresh per-attempt directory, closes it and renames it into a per-job staging
    directory, so a retried or speculative task never mixes with another attempt.
    After the job succeeds the driver moves every shard into place and writes the
    :data:`MANIFEST` last; a failed job leaves ``path`` without shards. Within a
    shard, rows with the same key keep the last one in partition order (use
    :func:`~sowlib.spark.lastvalue.last_value` first when the order matters).

    Args:
        df: rows to store; the key paths must name (nested) columns.
        path: the sharded store directory; must hold no shards yet.
        topic: topic name in every shard.
        shards: number of shards (= write tasks).
        keys: the key field paths, e.g. ``["/orderId"]``.
        message_type: ``json`` (rows are written as JSON objects).
        create_kwargs: extra :meth:`SowStore.create_topic` arguments (indexes, ...).
        progress: ``progress(done, total)`` over the job's Spark tasks (the total
            grows as Spark submits stages), True for a tqdm bar, None for none
            (:mod:`sowlib.progress`).
        storage_options: fsspec options when ``path`` is a URL.
    Returns:
        The shard directories, in shard order (for a URL: ``<url>/shard-NNNN``).
    Raises:
        ConfigError: bad shard count, keys or message type, or ``path`` already sharded.
        SparkSetupError: Spark's Python workers cannot import sowlib.
    """
    if shards < 1:
        raise ConfigError("shards", f"{shards!r} is not a positive shard count")
    if message_type != "json":
        raise ConfigError("message_type", f"{message_type!r}: sharded writes store JSON rows")
    key_list = list(keys)
    if not key_list:
        raise ConfigError("keys", "a sharded topic needs key fields")
    if is_url(path):
        return _write_versioned(
            df, os.fspath(path), topic, shards, key_list, create_kwargs, storage_options, progress
        )
    root = os.path.abspath(os.fspath(path))
    if is_sharded(root) or any(_SHARD.match(n) for n in _listdir(root)):
        raise ConfigError(root, "already holds a sharded store; remove it first")
    rep = reporter(progress, desc=f"write_sharded {topic}", unit="tasks")
    os.makedirs(root, exist_ok=True)
    staging = os.path.join(root, f"_staging-{uuid.uuid4().hex}")
    os.makedirs(staging)
    create = {"keys": key_list, "message_type": message_type, **dict(create_kwargs or {})}
    n = shards

    key_cols = [key_column(k).alias(f"k{i}") for i, k in enumerate(key_list)]
    message = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("message")
    routed = df.select(message, *key_cols)
    pairs = routed.rdd.map(lambda row: (shard_of(list(row[1:]), n), row[0])).partitionBy(
        n, lambda shard: shard
    )

    def write_partition(items: Iterable[tuple[int, str]]) -> Iterator[str]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        index = ctx.partitionId() if ctx is not None else 0
        yield _write_shard(staging, index, topic, create, (m for _, m in items))

    try:
        job = pairs.mapPartitions(write_partition)
        with worker_errors(df.sparkSession):
            if progress is None or progress is False:
                job.collect()
            else:
                run_with_progress(df.sparkSession.sparkContext, job.collect, rep)
        out = []
        for i in range(n):
            final = os.path.join(root, shard_name(i))
            os.rename(os.path.join(staging, shard_name(i)), final)
            out.append(final)
        manifest = {"shards": n, "topic": topic, "keys": key_list, "message_type": message_type}
        tmp = os.path.join(root, f".{MANIFEST}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh)
        os.replace(tmp, os.path.join(root, MANIFEST))  # the manifest last: shards are complete
        rep.update(rep.total or rep.done)
        return out
    finally:
        rep.close()
        shutil.rmtree(staging, ignore_errors=True)


def _write_versioned(
    df: DataFrame,
    url: str,
    topic: str,
    n: int,
    keys: list[str],
    create_kwargs: Mapping[str, Any] | None,
    storage_options: Mapping[str, Any] | None,
    progress: ProgressArg,
) -> list[str]:
    store = ShardedStore.create(
        url,
        topic,
        shards=n,
        keys=keys,
        create_kwargs=create_kwargs,
        storage_options=storage_options,
    )
    rep = reporter(progress, desc=f"write_sharded {topic}", unit="tasks")
    tag = f"write-{uuid.uuid4().hex}"
    key_cols = [key_column(k).alias(f"k{i}") for i, k in enumerate(keys)]
    message = F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("message")
    pairs = (
        df.select(message, *key_cols)
        .rdd.map(lambda row: (shard_of(list(row[1:]), n), row[0]))
        .partitionBy(n, lambda shard: shard)
    )

    def write_partition(index: int, items: Iterable[tuple[int, str]]) -> Iterator[tuple[int, int]]:
        with ShardWriter(store, index, 0, tag) as writer:
            chunk: list[str] = []
            for _, message in items:
                chunk.append(message)
                if len(chunk) >= _CHUNK:
                    writer.topic.publish_many(chunk)
                    chunk = []
            if chunk:
                writer.topic.publish_many(chunk)
            yield index, writer.commit()

    try:
        job = pairs.mapPartitionsWithIndex(write_partition)
        with worker_errors(df.sparkSession):
            if progress is None or progress is False:
                versions = dict(job.collect())
            else:
                versions = dict(run_with_progress(df.sparkSession.sparkContext, job.collect, rep))
        store.commit(versions, base=store.latest())
        rep.update(rep.total or rep.done)
    finally:
        rep.close()
    return [f"{url.rstrip('/')}/{shard_name(i)}" for i in range(n)]


def _listdir(root: str) -> list[str]:
    return os.listdir(root) if os.path.isdir(root) else []


def _write_shard(
    staging: str, index: int, topic: str, create: Mapping[str, Any], messages: Iterator[str]
) -> str:
    """Write one shard into a per-attempt directory, then rename it into the staging dir."""
    final = os.path.join(staging, shard_name(index))
    attempt = os.path.join(staging, f".{shard_name(index)}.{uuid.uuid4().hex}")
    try:
        with SowStore(attempt) as store:
            t = store.create_topic(topic, **create)
            chunk: list[str] = []
            for message in messages:
                chunk.append(message)
                if len(chunk) >= _CHUNK:
                    t.publish_many(chunk)
                    chunk = []
            if chunk:
                t.publish_many(chunk)
            store.flush()
        try:
            os.rename(attempt, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            # another attempt of this task already finished the same shard: keep it
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return final
