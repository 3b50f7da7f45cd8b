"""The ``sow`` Python data source: read (with filter pushdown), batch write and stream a SOW topic.

Planning, reads, writes and commits run in Spark's Python worker processes, so
everything opens stores by path. Imports pyspark, ``sowlib.store``, ``sowlib.expr``,
``sowlib.spark._handles``/``shards``/``_pushdown``; never ``storage``.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from sowlib.errors import ConfigError
from sowlib.expr import compile_filter
from sowlib.spark import _handles
from sowlib.spark._pushdown import Pushed, convert_row, infer_schema, translate
from sowlib.spark.shards import is_sharded, shard_paths
from sowlib.store import SowStore
from sowlib.topic import Topic

__all__ = ["SowDataSource", "register"]

_SAMPLE = 1_000


def register(spark: Any) -> None:
    """Register the ``sow`` data source with ``spark`` (a SparkSession).

    Example:
        >>> register(spark)  # doctest: +SKIP
        >>> spark.read.format("sow").option("path", "var/sow").option("topic", "orders").load()
    """
    spark.dataSource.register(SowDataSource)


class _Options:
    """The data source options, checked once."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = options.get("path")
        self.topic = options.get("topic")
        if not self.path or not self.topic:
            raise ConfigError("sow", "the options 'path' and 'topic' are required")
        self.path = os.path.abspath(self.path)
        self.message_type = options.get("message_type", "json").lower()
        self.filter = options.get("filter") or None
        self.schema = options.get("schema") or None
        keys = options.get("keys")
        self.keys = [k.strip() for k in keys.split(",") if k.strip()] if keys else None
        if self.filter is not None:
            compile_filter(self.filter)  # a bad filter fails at planning, with its offset

    def stores(self) -> list[str]:
        """The store directories to read: every shard of a sharded store, or the path."""
        return shard_paths(self.path) if is_sharded(self.path) else [self.path]


def _topic(store: SowStore, opts: _Options) -> Topic | None:
    try:
        return store.topic(opts.topic or "", opts.message_type)
    except KeyError:  # UnknownTopicError: an empty shard or a topic not created yet
        return None


class SowDataSource(DataSource):
    """``spark.read.format("sow")``: the records of a SOW topic as rows.

    Options: ``path`` (store directory or sharded store), ``topic``,
    ``message_type`` (json), ``filter`` (an AMPS filter evaluated by sowlib),
    ``schema`` (DDL; default: inferred from up to 1,000 records), and for writes
    ``keys`` (comma-separated key paths, to create the topic). Columns are the
    top-level fields plus ``_sow_key`` and ``_seq``.
    """

    @classmethod
    def name(cls) -> str:
        return "sow"

    def schema(self) -> StructType | str:
        opts = _Options(self.options)
        if opts.schema is not None:
            return opts.schema
        docs: list[Any] = []
        for path in opts.stores():
            if not os.path.isdir(path):
                continue
            topic = _topic(_handles.reader(path), opts)
            if topic is not None:
                docs.extend(r.doc for r in topic.sow(opts.filter, top_n=_SAMPLE))
            if len(docs) >= _SAMPLE:
                break
        return infer_schema(docs)

    def reader(self, schema: StructType) -> DataSourceReader:
        return SowReader(_Options(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return SowWriter(_Options(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SowStreamReader(_Options(self.options), schema)


class _StorePartition(InputPartition):  # type: ignore[misc]
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class SowReader(DataSourceReader):  # type: ignore[misc]
    """Batch reads: one partition per store (per shard), the filter evaluated by sowlib."""

    def __init__(self, opts: _Options, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.pushed: list[Pushed] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take the filters that translate exactly into AMPS; yield the others back to Spark."""
        for flt in filters:
            done = translate(flt, self.schema)
            if done is None:
                yield flt
            else:
                self.pushed.append(done)

    def partitions(self) -> Sequence[InputPartition]:
        return [_StorePartition(p) for p in self.opts.stores()]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if not os.path.isdir(partition.path):
            return
        topic = _topic(_handles.reader(partition.path), self.opts)
        if topic is None:
            return
        clauses = [f"({self.opts.filter})"] if self.opts.filter else []
        clauses += [f"({p.amps})" for p in self.pushed]
        records = topic.sow(" AND ".join(clauses) if clauses else None)
        for rec in records:
            row = convert_row(rec, self.schema)
            # the AMPS filter already chose the records; the exact Spark check on the
            # converted row guards against a field whose JSON type differs from the schema
            if all(p.check(row) for p in self.pushed):
                yield row


class _Staged(WriterCommitMessage):  # type: ignore[misc]
    def __init__(self, file: str, partition: int) -> None:
        self.file = file
        self.partition = partition


class SowWriter(DataSourceWriter):  # type: ignore[misc]
    """Batch writes: tasks stage rows in files; ``commit`` (one process) applies them.

    A store has one writer process, so tasks never open it: each task writes its
    rows as JSON lines into ``<path>/_incoming/<job>/`` and reports the file; the
    single ``commit`` opens the writer, publishes the files in partition order and
    removes them. ``abort`` removes the staged files; a failed job changes nothing.
    """

    def __init__(self, opts: _Options, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise ConfigError("mode", "the sow data source appends (mode('append'))")
        if is_sharded(opts.path):
            raise ConfigError(opts.path, "write sharded stores with shards.write_sharded")
        self.opts = opts
        self.columns = [f.name for f in schema.fields if f.name not in ("_sow_key", "_seq")]
        self.staging = os.path.join(opts.path, "_incoming", uuid.uuid4().hex)

    def write(self, iterator: Iterator[Any]) -> _Staged:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        os.makedirs(self.staging, exist_ok=True)
        file = os.path.join(self.staging, f"part-{partition:05d}-{uuid.uuid4().hex}.jsonl")
        with open(file, "w", encoding="utf-8") as fh:
            for row in iterator:
                values = row.asDict(recursive=True)
                doc = {c: values[c] for c in self.columns if values.get(c) is not None}
                fh.write(json.dumps(doc, default=str) + "\n")
        return _Staged(file, partition)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        staged = sorted((m for m in messages if isinstance(m, _Staged)), key=lambda m: m.partition)
        try:
            with SowStore(self.opts.path) as store:
                if self.opts.keys is not None:
                    topic = store.create_topic(
                        self.opts.topic or "", message_type=self.opts.message_type,
                        keys=self.opts.keys,
                    )
                else:
                    topic = store.topic(self.opts.topic or "", self.opts.message_type)
                for msg in staged:
                    with open(msg.file, encoding="utf-8") as fh:
                        batch: list[str] = []
                        for line in fh:
                            batch.append(line)
                            if len(batch) >= 5_000:
                                topic.publish_many(batch)
                                batch = []
                        if batch:
                            topic.publish_many(batch)
                store.flush()
        finally:
            self._cleanup()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(self.staging))
        except OSError:
            pass  # another job is staging too


class _Range(InputPartition):  # type: ignore[misc]
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start = start
        self.end = end


class SowStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """A topic's change log as a stream; offsets are sequence numbers (``{"seq": n}``).

    Each micro-batch is ``topic.replay(since=start)`` up to ``end``. Publishes become
    rows (matching ``filter``); deletes and expirations become rows only when the
    schema has a ``_change`` column (then holding publish/delete/expire, with the
    fields NULL). Changes removed by compaction before a batch reads them are gone.
    """

    def __init__(self, opts: _Options, schema: StructType) -> None:
        if is_sharded(opts.path):
            raise ConfigError(opts.path, "stream one shard at a time (a sequence is per store)")
        self.opts = opts
        self.schema = schema
        self.with_changes = "_change" in schema.fieldNames()

    def _topic(self) -> Topic | None:
        if not os.path.isdir(self.opts.path):
            return None
        return _topic(_handles.reader(self.opts.path), self.opts)

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self) -> dict[str, int]:
        topic = self._topic()
        return {"seq": 0 if topic is None else int(topic.stats()["last_seq"] or 0)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        return [_Range(int(start["seq"]), int(end["seq"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        topic = self._topic()
        if topic is None:
            return
        flt = compile_filter(self.opts.filter) if self.opts.filter else None
        for change in topic.replay(since=partition.start):
            rec = change.record
            if rec.seq > partition.end:
                break
            if change.kind == "publish":
                if flt is None or flt.matches(rec.doc):
                    yield convert_row(rec, self.schema, change="publish")
            elif self.with_changes:
                yield convert_row(rec, self.schema, change=change.kind, with_fields=False)

    def commit(self, end: dict[str, int]) -> None:
        return None
