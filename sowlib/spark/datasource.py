"""The ``sow`` Python data source: read (with filter pushdown), batch write and stream a SOW topic.

Planning, reads, writes and commits run in Spark's Python worker processes, so
everything opens stores by path (or by configuration: ``configured``). Imports pyspark,
``sowlib.store``, ``sowlib.expr``, ``sowlib.spark.handles``, ``configured`` and ``shards``;
never ``storage``.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from sowlib.errors import ConfigError
from sowlib.expr import compile_filter
from sowlib.query import Record
from sowlib.spark import handles
from sowlib.spark.batches import batch_readable, convert_value, record_batches
from sowlib.spark.configured import config_source, read_topic
from sowlib.spark.remote import is_url
from sowlib.spark.render import json_rows, renders
from sowlib.spark.shards import is_sharded, shard_paths
from sowlib.spark.versions import ShardedStore
from sowlib.store import SowStore
from sowlib.topic import Topic

__all__ = ["SowDataSource", "SowPushdownReader", "SowReader", "register", "spark_type"]

_SAMPLE = 1_000
_META = ("_sow_key", "_seq", "_change")
#: Columns a write leaves out of the stored documents (the store sets them).
_NOT_WRITTEN = ("_sow_key", "_seq")
_OPS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)


@attrs.frozen
class Pushed:
    """A Spark filter taken by the reader: its AMPS text and an exact check on a converted row."""

    amps: str
    index: int
    op: str
    values: tuple[Any, ...]

    def check(self, row: tuple[Any, ...]) -> bool:
        """Whether the converted ``row`` passes the filter."""
        return self.check_value(row[self.index])

    def check_value(self, value: Any) -> bool:
        """Whether a converted value of the filter's column passes it."""
        if self.op == "null":
            return value is None
        if self.op == "notnull":
            return value is not None
        if value is None:
            return False
        if self.op == "in":
            return value in self.values
        other = self.values[0]
        match self.op:
            case "=":
                return bool(value == other)
            case ">":
                return bool(value > other)
            case ">=":
                return bool(value >= other)
            case "<":
                return bool(value < other)
            case _:
                return bool(value <= other)


def _literal(value: Any, kind: T.DataType) -> str | None:
    """The AMPS literal for ``value`` compared with a ``kind`` column, if exact."""
    if (
        isinstance(kind, _NUMERIC)
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        if isinstance(value, float) and value != value:  # NaN orders differently in Spark
            return None
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(kind, T.StringType) and isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return None


def translate(flt: Filter, schema: StructType) -> Pushed | None:
    """The AMPS form of a Spark filter on a top-level number/string column, or None."""
    attribute: tuple[str, ...] = getattr(flt, "attribute", ())
    names = schema.fieldNames()
    if len(attribute) != 1 or attribute[0] not in names or attribute[0] in _META:
        return None
    name = attribute[0]
    index = names.index(name)
    kind = schema.fields[index].dataType
    if not isinstance(kind, (*_NUMERIC, T.StringType)) or not name.replace("_", "").isalnum():
        return None
    field = f"/{name}"
    if isinstance(flt, IsNull):
        return Pushed(f"{field} IS NULL", index, "null", ())
    if isinstance(flt, IsNotNull):
        return Pushed(f"{field} IS NOT NULL", index, "notnull", ())
    value: Any = getattr(flt, "value", None)
    if isinstance(flt, In):
        texts = [_literal(v, kind) for v in value if v is not None]
        if not texts or any(t is None for t in texts):
            return None
        values = tuple(v for v in value if v is not None)
        return Pushed(f"{field} IN ({', '.join(map(str, texts))})", index, "in", values)
    op = _OPS.get(type(flt))
    text = _literal(value, kind) if op is not None else None
    if op is None or text is None:
        return None
    return Pushed(f"{field} {op} {text}", index, op, (value,))


def spark_type(values: list[Any]) -> str:
    """The Spark SQL type of a column holding ``values`` (None ignored; mixed: string)."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return "boolean"
    if kinds and kinds <= {int}:
        return "bigint"
    if kinds and kinds <= {int, float}:
        return "double"
    return "string"


def infer_schema(docs: Sequence[Any]) -> str:
    """A DDL schema from sample documents: top-level fields in first-seen order, then metadata.

    JSON booleans, integers and numbers map to boolean, bigint and double; text,
    objects, arrays and mixed kinds to string (objects and arrays as JSON text).
    """
    seen: dict[str, list[Any]] = {}
    for doc in docs:
        if isinstance(doc, Mapping):
            for name, value in doc.items():
                if name not in _META:
                    seen.setdefault(str(name), []).append(value)
    cols = [f"`{n.replace('`', '``')}` {spark_type(vs)}" for n, vs in seen.items()]
    return ", ".join([*cols, "_sow_key string", "_seq bigint"])


def convert_row(
    rec: Record, schema: StructType, *, change: str = "publish", with_fields: bool = True
) -> tuple[Any, ...]:
    """A record as a tuple in ``schema`` order; a field of another kind becomes NULL."""
    doc = rec.doc if with_fields and isinstance(rec.doc, Mapping) else {}
    out: list[Any] = []
    for f in schema.fields:
        if f.name == "_sow_key":
            out.append(rec.sow_key)
        elif f.name == "_seq":
            out.append(rec.seq)
        elif f.name == "_change":
            out.append(change)
        else:
            out.append(convert_value(doc.get(f.name), f.dataType))
    return tuple(out)


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
        path, topic, config = options.get("path") or "", options.get("topic"), options.get("config")
        if not (path or config) or not topic:
            raise ConfigError("sow", "the options 'path' (or 'config') and 'topic' are required")
        self.url = is_url(path)  # a versioned sharded store (sowlib.spark.versions)
        self.path: str = path if self.url or not path else os.path.abspath(path)
        #: the store's AMPS configuration: its views read too (sowlib.spark.configured)
        self.config = config_source(config) if config else None
        if self.config is not None and (self.url or is_sharded(self.path)):
            raise ConfigError("config", "a configuration describes one store directory")
        self.storage = {k[8:]: v for k, v in options.items() if k.lower().startswith("storage.")}
        self.topic: str = topic
        self.message_type = options.get("message_type", "json").lower()
        self.filter = options.get("filter") or None
        self.schema = options.get("schema") or None
        self.pushdown = options.get("pushdown", "true").lower() != "false"
        keys = options.get("keys")
        self.keys = [k.strip() for k in keys.split(",") if k.strip()] if keys else None
        if self.filter is not None:
            compile_filter(self.filter)  # a bad filter fails at planning, with its offset

    def stores(self) -> list[_StorePartition]:
        """What to read: every shard of a sharded store (for a URL, at the latest
        commit's versions), or the store at the path (or the configuration's)."""
        if self.config is not None:
            return [_StorePartition(self.path)]
        if self.url:
            commit = ShardedStore(self.path, storage_options=self.storage).latest()
            return [
                _StorePartition(self.path, (i, v, self.storage))
                for i, v in enumerate(commit.shards)
            ]
        paths = shard_paths(self.path) if is_sharded(self.path) else [self.path]
        return [_StorePartition(p) for p in paths]

    def opened(self, path: str) -> AbstractContextManager[Topic | None]:
        """The topic to read at ``path``, for a ``with`` block (None: nothing to read)."""
        return read_topic(path, self.config, self.topic, self.message_type)

    def batch_only(self, what: str) -> None:
        """Refuse the ``config`` option for a write or a stream (views are not stored)."""
        if self.config is not None:
            raise ConfigError("config", f"{what} with the 'path' option; 'config' is for reads")


def _topic(store: SowStore, opts: _Options) -> Topic | None:
    try:
        return store.topic(opts.topic, opts.message_type)
    except KeyError:  # UnknownTopicError: an empty shard or a topic not created yet
        return None


class SowDataSource(DataSource):
    """``spark.read.format("sow")``: the records of a SOW topic as rows.

    Options: ``path`` (store directory or sharded store), ``topic``, ``config`` (an
    AMPS configuration file or its XML text, opened read-only for each read, so its
    views and conflated topics read too; ``path`` then overrides its store
    directory), ``message_type`` (json), ``filter`` (an AMPS filter evaluated by sowlib),
    ``schema`` (DDL; default: inferred from up to 1,000 records), ``pushdown``
    (``true``: take exact Spark filters, see :class:`SowPushdownReader`), and for writes
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
        for part in opts.stores():
            with opts.opened(part.local()) as topic:
                if topic is not None:
                    docs.extend(r.doc for r in topic.sow(opts.filter, top_n=_SAMPLE))
            if len(docs) >= _SAMPLE:
                break
        return infer_schema(docs)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = _Options(self.options)
        if opts.pushdown and not _planned_without_pushdown():
            return SowPushdownReader(opts, schema)
        return SowReader(opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = _Options(self.options)
        fields = [f for f in schema.fields if f.name not in _NOT_WRITTEN]
        names = [f.name for f in fields]
        if renders(fields) and len(set(names)) == len(names):
            return SowArrowWriter(opts, schema, overwrite)
        return SowWriter(opts, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SowStreamReader(_Options(self.options), schema)


#: The Spark worker that plans Python data source reads when
#: ``spark.sql.python.filterPushdown.enabled`` is false; it rejects a reader that
#: implements ``pushFilters``. With the setting on, ``data_source_pushdown_filters``
#: plans the read and calls ``pushFilters``.
_PLAN_WITHOUT_PUSHDOWN = "plan_data_source_read"


def _planned_without_pushdown() -> bool:
    """Whether Spark is planning this read with filter pushdown disabled.

    The setting is not sent to the Python worker, but Spark plans the read in a
    different worker module for each value, so the caller tells it: under the
    pushdown-disabled planner the reader must not implement ``pushFilters`` (Spark
    would fail with DATA_SOURCE_PUSHDOWN_DISABLED), and Spark applies every filter.
    """
    frame = inspect.currentframe()
    try:
        while frame is not None:
            module = str(frame.f_globals.get("__name__", ""))
            file = os.path.basename(frame.f_code.co_filename)
            if module.endswith(f".{_PLAN_WITHOUT_PUSHDOWN}") or file == (
                f"{_PLAN_WITHOUT_PUSHDOWN}.py"
            ):
                return True
            frame = frame.f_back
        return False
    finally:
        del frame  # frames hold their locals; drop the cycle at once


class _StorePartition(InputPartition):
    """A store directory, or shard ``(number, version, storage options)`` of a URL."""

    def __init__(self, path: str, shard: tuple[int, int, dict[str, str]] | None = None) -> None:
        super().__init__((path, shard))
        self.path = path
        self.shard = shard

    def local(self) -> str:
        """The directory to open: for a shard, its local copy at the version."""
        if self.shard is None:
            return self.path
        number, version, storage = self.shard
        return ShardedStore(self.path, storage_options=storage).checkout(number, version)


class SowReader(DataSourceReader):
    """Batch reads: one partition per store (per shard), the filter evaluated by sowlib."""

    def __init__(self, opts: _Options, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.pushed: list[Pushed] = []

    def partitions(self) -> Sequence[InputPartition]:
        return self.opts.stores()

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...] | pa.RecordBatch]:
        """The partition's records: Arrow record batches for flat schemas, else tuples."""
        assert isinstance(partition, _StorePartition)
        with self.opts.opened(partition.local()) as topic:
            if topic is not None:
                yield from self._read(topic)

    def _read(self, topic: Topic) -> Iterator[tuple[Any, ...] | pa.RecordBatch]:
        clauses = [f"({self.opts.filter})"] if self.opts.filter else []
        clauses += [f"({p.amps})" for p in self.pushed]
        records = topic.sow(" AND ".join(clauses) if clauses else None)
        if batch_readable(self.schema):
            keep = [(p.index, p.check_value) for p in self.pushed]
            yield from record_batches(records, self.schema, keep)
            return
        for rec in records:
            row = convert_row(rec, self.schema)
            # the AMPS filter already chose the records; the exact Spark check on the
            # converted row guards against a field whose JSON type differs from the schema
            if all(p.check(row) for p in self.pushed):
                yield row


class SowPushdownReader(SowReader):
    """:class:`SowReader` that also takes Spark filters (needs
    ``spark.sql.python.filterPushdown.enabled=true``; option ``pushdown=false`` opts out).

    Known Spark 4 behaviour: a query with no filters on a DataFrame that an earlier
    filtered query used may reuse that query's pushed filters; load a fresh
    DataFrame per query (``spark.read...load()``) when mixing the two.
    """

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take the filters that translate exactly into AMPS; yield the others back to Spark."""
        self.pushed = []  # Spark may plan the same reader again for another query
        for flt in filters:
            done = translate(flt, self.schema)
            if done is None:
                yield flt
            else:
                self.pushed.append(done)


class _Staged(WriterCommitMessage):
    def __init__(self, file: str, partition: int) -> None:
        self.file = file
        self.partition = partition


class SowWriter(DataSourceWriter):
    """Batch writes: tasks stage rows in files; ``commit`` (one process) applies them.

    A store has one writer process, so tasks never open it: each task writes its
    rows as JSON lines into ``<path>/_incoming/<job>/`` and reports the file; the
    single ``commit`` opens the writer, publishes the files in partition order and
    removes them. ``abort`` removes the staged files; a failed job changes nothing.
    """

    def __init__(self, opts: _Options, schema: StructType, overwrite: bool) -> None:
        opts.batch_only("write")
        if overwrite:
            raise ConfigError("mode", "the sow data source appends (mode('append'))")
        if opts.url or is_sharded(opts.path):
            raise ConfigError(opts.path, "write sharded stores with write_sharded or ShardedSink")
        self.opts = opts
        self.columns = [f.name for f in schema.fields if f.name not in _NOT_WRITTEN]
        self.staging = os.path.join(opts.path, "_incoming", uuid.uuid4().hex)

    def write(self, iterator: Iterator[Any]) -> _Staged:
        file, partition = self._staged_file()
        with open(file, "w", encoding="utf-8") as fh:
            for row in iterator:
                values = row.asDict(recursive=True)
                doc = {c: values[c] for c in self.columns if values.get(c) is not None}
                fh.write(json.dumps(doc, default=str) + "\n")
        return _Staged(file, partition)

    def _staged_file(self) -> tuple[str, int]:
        """A new file in the staging directory for this task, and the task's partition."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        os.makedirs(self.staging, exist_ok=True)
        file = os.path.join(self.staging, f"part-{partition:05d}-{uuid.uuid4().hex}.jsonl")
        return file, partition

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        staged = sorted((m for m in messages if isinstance(m, _Staged)), key=lambda m: m.partition)
        try:
            with SowStore(self.opts.path) as store:
                if self.opts.keys is not None:
                    topic = store.create_topic(
                        self.opts.topic,
                        message_type=self.opts.message_type,
                        keys=self.opts.keys,
                    )
                else:
                    topic = store.topic(self.opts.topic, self.opts.message_type)
                for msg in staged:
                    with open(msg.file, encoding="utf-8") as fh:
                        batch: list[str] = []
                        for line in fh:
                            batch.append(line.removesuffix("\n"))
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


class SowArrowWriter(SowWriter, DataSourceArrowWriter):
    """:class:`SowWriter` for flat rows of plain columns (what the sink renders in the
    driver, :func:`sowlib.spark.render.renders`): tasks receive Arrow record batches
    and stage them as JSON lines rendered a column at a time, not one Row at a time.
    The JSON is what ``SowSink`` writes for the same rows (doubles in shortest
    round-trip form, non-finite ones as ``"NaN"``/``"Infinity"``/``"-Infinity"``).
    """

    def write(self, iterator: Iterator[Any]) -> _Staged:
        file, partition = self._staged_file()
        with open(file, "wb") as fh:
            for batch in iterator:
                names = batch.schema.names
                payload = [i for i, name in enumerate(names) if name not in _NOT_WRITTEN]
                rows = json_rows(batch, [names[i] for i in payload], payload)
                if rows:
                    fh.write(b"\n".join(rows) + b"\n")
        return _Staged(file, partition)


class _Range(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start = start
        self.end = end


class SowStreamReader(DataSourceStreamReader):
    """A topic's change log as a stream; offsets are sequence numbers (``{"seq": n}``).

    Each micro-batch is ``topic.replay(since=start)`` up to ``end``. Publishes become
    rows (matching ``filter``); deletes and expirations become rows only when the
    schema has a ``_change`` column (then holding publish/delete/expire, with the
    fields NULL). Changes removed by compaction before a batch reads them are gone.
    """

    def __init__(self, opts: _Options, schema: StructType) -> None:
        opts.batch_only("stream")
        if opts.url or is_sharded(opts.path):
            raise ConfigError(opts.path, "stream one shard at a time (a sequence is per store)")
        self.opts = opts
        self.schema = schema
        self.with_changes = "_change" in schema.fieldNames()

    def _topic(self) -> Topic | None:
        if not os.path.isdir(self.opts.path):
            return None
        return _topic(handles.reader(self.opts.path), self.opts)

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """The last sequence number, or the ``maxRows``-th change after ``start``."""
        topic = self._topic()
        if topic is None:
            return dict(start)
        if isinstance(limit, ReadMaxRows):
            seqs = [c.record.seq for c in topic.replay(since=int(start["seq"]))]
            if len(seqs) > limit.max_rows:
                return {"seq": seqs[limit.max_rows - 1]}
        return {"seq": max(int(start["seq"]), int(topic.stats()["last_seq"] or 0))}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        return [_Range(int(start["seq"]), int(end["seq"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _Range)
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
