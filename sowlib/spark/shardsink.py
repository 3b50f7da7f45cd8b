"""ShardedSink: a ``foreachBatch`` sink that applies each micro-batch on the executors.

The sibling of :class:`~sowlib.spark.sink.SowSink` for a versioned sharded store
(:mod:`.versions`) at a root URL. Imports pyspark, pandas, pyarrow, ``sowlib.errors`` and the
``.routing``, ``.shards``, ``.versions`` and ``.shardwriter`` modules; never
``storage``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf

from sowlib.errors import ConfigError, StoreNotFoundError
from sowlib.spark.routing import shard_of
from sowlib.spark.shards import key_column
from sowlib.spark.shardwriter import ShardWriter
from sowlib.spark.versions import Commit, ShardedStore
from sowlib.spark.workers import worker_errors

__all__ = ["ShardedSink"]

_CHUNK = 5_000
_RESULT = pa.schema([("shard", pa.int32()), ("version", pa.int64())])


class ShardedSink:
    """Apply streaming micro-batches to a sharded store; ``writeStream.foreachBatch(sink)``.

    Each row becomes one JSON message (every column but ``delete_column``, NULL
    fields left out, as Spark's ``to_json`` writes it), or deletes the record with
    its key when ``delete_column`` is true. The rows are routed by
    :func:`~sowlib.spark.routing.shard_of` over the key columns; each shard's rows
    go to one task, in the order the batch yields them (partition by partition),
    and that task applies them to a local copy of the shard at the batch's base
    version and commits the shard's next version (only the log's new tail is
    uploaded). The driver then commits one store version naming every shard's
    version and the batch id.

    Exactly once: a batch whose id is not above the last one committed under
    ``query_name`` is skipped. A task run twice (a retry, a speculative copy, a batch
    replayed after the driver died between the shard commits and the store commit)
    finds its shard version already committed with the same ``query#batch`` tag and
    adopts it, applying nothing twice. A concurrent writer of the same store makes
    the commit fail with :class:`~sowlib.spark.remote.ShardConflictError`.

    Args:
        root: the store's URL; created with ``topic``, ``keys`` and ``shards`` when absent.
        topic, keys, shards, message_type, create_kwargs: the new store's topic.
        delete_column: a boolean column; true rows are deletes.
        query_name: names this sink's progress (default: the topic name).
        storage_options: fsspec options; cache_dir: the executors' cache
            (default: Spark's local directories).
    Raises:
        ConfigError: no store at ``root`` and no ``topic``/``keys``/``shards`` to
            create one, or a bad argument.
    """

    def __init__(
        self,
        root: str,
        topic: str | None = None,
        *,
        keys: Sequence[str] | None = None,
        shards: int | None = None,
        message_type: str = "json",
        delete_column: str | None = None,
        query_name: str | None = None,
        create_kwargs: Mapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | None = None,
    ) -> None:
        if message_type != "json":
            raise ConfigError("message_type", f"{message_type!r}: the sharded sink writes JSON")
        try:
            self.store = ShardedStore(root, storage_options=storage_options, cache_dir=cache_dir)
        except StoreNotFoundError:
            if topic is None or not keys or shards is None:
                raise ConfigError(
                    root, "no sharded store here; give topic, keys and shards to create one"
                ) from None
            self.store = ShardedStore.create(
                root,
                topic,
                shards=shards,
                keys=keys,
                create_kwargs=create_kwargs,
                storage_options=storage_options,
                cache_dir=cache_dir,
            )
        if topic is not None and topic != self.store.topic:
            raise ConfigError("topic", f"{root} holds topic {self.store.topic!r}, not {topic!r}")
        self.delete_column = delete_column
        self.query_name = query_name or self.store.topic
        self._keys: list[int] | None = None

    @property
    def last_batch_id(self) -> int | None:
        """The id of the last batch committed under :attr:`query_name`, or None."""
        return self.store.latest().last_batch(self.query_name)

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        """Apply one micro-batch (the ``foreachBatch`` callback).

        Raises:
            ShardConflictError: another writer committed first (nothing of this
                batch is visible; Spark's retry of the batch applies it on the new
                version).
            ConfigError: ``delete_column`` or a key field is not a column.
            SparkSetupError: Spark's Python workers cannot import sowlib.
        """
        base = self.store.latest()
        last = base.last_batch(self.query_name)
        if last is not None and batch_id <= last:
            return
        with worker_errors(batch_df.sparkSession):
            updates = self.apply(batch_df, batch_id, base)
        self.store.commit(updates, base=base, batch=(self.query_name, batch_id))

    def apply(self, batch_df: DataFrame, batch_id: int, base: Commit) -> dict[int, int]:
        """Run the batch's Spark job: every shard with rows commits its next version.

        Returns ``{shard: version}`` for the store commit; the caller (``__call__``)
        writes it. Until then the new shard versions are invisible to readers.
        """
        cols = batch_df.columns
        if self.delete_column is not None and self.delete_column not in cols:
            raise ConfigError("column", f"{self.delete_column!r} is not among the columns {cols!r}")
        payload = [F.col(f"`{c}`") for c in cols if c != self.delete_column]
        message = F.to_json(F.struct(*payload), {"ignoreNullFields": "true"})
        deleted = (
            F.coalesce(F.col(f"`{self.delete_column}`").cast("boolean"), F.lit(False))
            if self.delete_column is not None
            else F.lit(False)
        )
        keys = [key_column(k) for k in self.store.keys]
        n = self.store.shards
        store = self.store
        shard_versions = base.shards
        tag = f"{self.query_name}#{batch_id}"

        def shards_of(*cols: pd.Series) -> pd.Series:
            values = zip(*(c.tolist() for c in cols), strict=True)
            return pd.Series([shard_of(list(v), n) for v in values], dtype="int32")

        def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            writer: ShardWriter | None = None
            try:
                for batch in batches:
                    if not batch.num_rows:
                        continue
                    if writer is None:
                        shard = int(batch.column(2)[0].as_py())
                        writer = ShardWriter(store, shard, shard_versions[shard], tag)
                    _apply(writer, batch.column(0).to_pylist(), batch.column(1))
                if writer is not None:
                    version = writer.commit()
                    yield pa.RecordBatch.from_pydict(
                        {"shard": [writer.shard], "version": [version]}, schema=_RESULT
                    )
            finally:
                if writer is not None:
                    writer.discard()

        route = pandas_udf(shards_of, returnType="int")  # type: ignore[call-overload]
        targets = F.array(*[F.lit(p) for p in self._partition_keys(batch_df)])
        job = (
            batch_df.select(
                message.alias("m"),
                deleted.alias("d"),
                route(*keys).alias("s"),
                # the batch's order: partition by partition, row by row
                F.monotonically_increasing_id().alias("o"),
            )
            .withColumn("p", F.element_at(targets, F.col("s") + 1))
            .repartition(n, "p")
            .sortWithinPartitions("o")
            .select("m", "d", "s")
            .mapInArrow(write, "shard int, version long")
        )
        return {int(r["shard"]): int(r["version"]) for r in job.collect()}

    def _partition_keys(self, df: DataFrame) -> list[int]:
        """For each shard ``i``, an int that Spark's hash partitioning into ``shards``
        partitions sends to partition ``i`` (``pmod(hash(p), n)``, computed by Spark
        itself once per sink), so the shuffle moves each shard's rows to one task."""
        n = self.store.shards
        if self._keys is None:
            limit, found = 16 * n, dict[int, int]()
            while len(found) < n:
                ids = df.sparkSession.range(0, limit).select(F.col("id").cast("int").alias("p"))
                rows = (
                    ids.select("p", F.expr(f"pmod(hash(p), {n})").alias("r"))
                    .groupBy("r")
                    .agg(F.min("p").alias("p"))
                    .collect()
                )
                found = {int(r["r"]): int(r["p"]) for r in rows}
                limit *= 4
            self._keys = [found[i] for i in range(n)]
        return self._keys

    def __repr__(self) -> str:
        return f"ShardedSink({self.store.root!r}, query_name={self.query_name!r})"


def _apply(writer: ShardWriter, messages: list[str], deleted: pa.Array) -> None:
    """Publish runs of messages and delete by data, in order."""
    if not deleted.true_count:
        for start in range(0, len(messages), _CHUNK):
            writer.topic.publish_many(messages[start : start + _CHUNK])
        return
    flags = deleted.to_pylist()
    run: list[str] = []
    for message, gone in zip(messages, flags, strict=True):
        if gone:
            if run:
                writer.topic.publish_many(run)
                run = []
            writer.topic.sow_delete_by_data(message)
            continue
        run.append(message)
        if len(run) >= _CHUNK:
            writer.topic.publish_many(run)
            run = []
    if run:
        writer.topic.publish_many(run)
