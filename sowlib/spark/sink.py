"""SowSink: a ``foreachBatch`` sink that applies each micro-batch to a SOW topic exactly once.

Runs in the driver process and holds the store's writer lock. Rows leave the JVM as
Arrow record batches, from one Spark job or one partition at a time (see
:func:`_arrow_batches`). Imports pyspark, pyarrow, ``sowlib.store``, ``sowlib.state`` and
``sowlib.errors``; never ``storage`` internals.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.serializers import NoOpSerializer
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.util import _local_iterator_from_socket

from sowlib.errors import ConfigError, StoreClosedError
from sowlib.paths import FieldPath
from sowlib.spark.render import is_valid_utf8, json_rows, renders
from sowlib.spark.workers import worker_errors
from sowlib.state import StateStore
from sowlib.store import SowStore
from sowlib.topic import Topic

__all__ = ["PROGRESS_TOPIC", "SowSink"]

#: The topic (keyed on ``/key``) where each sink records its last applied batch id.
PROGRESS_TOPIC = "_sowlib_spark_progress"

#: Spark types whose values the topic hashes as the JSON text of them would parse.
_KEY_TYPES = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType)

_MSG = "__sow_message"
_DEL = "__sow_delete"


class SowSink:
    """Apply streaming micro-batches to a SOW topic; use as ``writeStream.foreachBatch(sink)``.

    Each row becomes one message: the row as a JSON object (every column but
    ``delete_column``; NULL fields are left out), or the value of
    ``message_column`` (str or bytes, in the topic's message type). A row whose
    ``delete_column`` is true deletes the record with its key instead
    (``sow_delete_by_data``). The JSON is what Spark's ``to_json`` writes
    (timestamps as ISO-8601 text in the session time zone, dates as ``yyyy-MM-dd``,
    binary as base64, nested structs as objects with their NULL fields left out too,
    NULL array elements kept as ``null``). For a JSON topic, flat rows of string,
    boolean, integer and double columns (and a boolean ``delete_column``) are
    rendered in the driver from the Arrow data instead (:mod:`sowlib.spark.render`:
    the same text, except that doubles are spelled in their shortest round-trip form,
    ``10000000.0`` for Spark's ``1.0E7``); anything else is rendered by Spark. Rows
    are applied in the order the batch yields them (partition by partition).

    Memory: by default one Spark job computes all partitions of a micro-batch in
    parallel and the driver receives the whole micro-batch as Arrow record batches
    (about the size of its JSON text, plus one ``chunk_rows`` chunk as Python bytes)
    before applying it; the result counts against ``spark.driver.maxResultSize``.
    With ``stream_partitions=True`` the partitions are streamed one at a time
    instead (one Spark job per partition, the next computed while this one is
    applied), so the driver holds at most two partitions; use it for micro-batches
    too big to hold in the driver. The single job is much faster when a micro-batch
    has many partitions (every job has a fixed start-up cost, and 200 shuffle
    partitions are 200 jobs) and as fast with a few.

    Exactly once: after a batch is applied, its id is stored (with the data, in
    the same store) under ``query_name`` in the :data:`PROGRESS_TOPIC` topic and the
    store is flushed. A batch whose id is not above the stored one is skipped, so a
    batch Spark replays after a failure is not applied twice; a batch that failed
    half-way has no progress record and is applied again in full, which leaves the
    same state because publishing a row again stores the same latest value.

    Args:
        path: the store directory (opened as the writer, in the driver).
        topic: the topic name; created with ``keys`` and ``create_kwargs`` when absent.
        keys: the topic's key fields, e.g. ``["/orderId"]``.
        message_type: the topic's message type.
        message_column: take each message from this column instead of the JSON row.
        delete_column: a boolean column; true rows are deletes.
        query_name: names this sink's progress record (default: the topic name); give
            each streaming query writing to the same store its own name.
        create_kwargs: extra :meth:`SowStore.create_topic` arguments (indexes, ...).
        chunk_rows: publish in batches of at most this many messages.
        stream_partitions: stream each micro-batch to the driver one partition at a
            time (bounded memory, one Spark job per partition) instead of collecting
            it with one job.

    Raises:
        StoreLockedError: another process holds the store's writer lock.
        ConfigError: a bad argument.

    Example:
        >>> sink = SowSink("var/sow", "orders", keys=["/orderId"])  # doctest: +SKIP
        >>> df.writeStream.foreachBatch(sink).start()  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        topic: str,
        *,
        keys: list[str] | str | None = None,
        message_type: str = "json",
        message_column: str | None = None,
        delete_column: str | None = None,
        query_name: str | None = None,
        create_kwargs: Mapping[str, Any] | None = None,
        chunk_rows: int = 10_000,
        stream_partitions: bool = False,
    ) -> None:
        if chunk_rows < 1:
            raise ConfigError("chunk_rows", f"{chunk_rows!r} is not a positive number of rows")
        self.path = os.path.abspath(os.fspath(path))
        self.message_column = message_column
        self.delete_column = delete_column
        self.query_name = query_name or topic
        self.chunk_rows = chunk_rows
        self.stream_partitions = stream_partitions
        self.store = SowStore(self.path)
        try:
            if topic in self.store and keys is None and not create_kwargs:
                self.topic: Topic = self.store.topic(topic, message_type)
            else:
                self.topic = self.store.create_topic(
                    topic, message_type=message_type, keys=keys, **dict(create_kwargs or {})
                )
            self._key_field = _top_field(self.topic.config.keys)
            progress = self.store.create_topic(PROGRESS_TOPIC, keys=["/key"])
            self._progress = StateStore(progress, self.query_name)
        except BaseException:
            self.store.close()
            raise

    @property
    def last_batch_id(self) -> int | None:
        """The id of the last batch applied under :attr:`query_name`, or None."""
        value = self._progress.get("batch_id")
        return value if isinstance(value, int) else None

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        """Apply one micro-batch (the ``foreachBatch`` callback); O(rows) publishes.

        Raises:
            StoreClosedError: the sink was closed.
            ConfigError: ``message_column`` or ``delete_column`` is not a column,
                ``message_column`` is neither string nor binary, or a message is NULL.
            SowError: a row is not a valid message (the batch stays unrecorded, so
                Spark's retry of the same batch applies it again).
            PySparkException: the Spark job computing the batch failed (the batch stays
                unrecorded); py4j's ``Py4JJavaError`` with ``stream_partitions``, as
                from ``toLocalIterator``.
            SparkSetupError: that job failed because Spark's Python workers cannot
                import sowlib (a batch read from the ``sow`` source, say).
        """
        if self.store.closed:
            raise StoreClosedError(f"sink {self.query_name!r} on {self.path}")
        last = self.last_batch_id
        if last is not None and batch_id <= last:
            return
        with worker_errors(batch_df.sparkSession):  # a batch read by sowlib on the workers
            for kind, messages, keys in self._runs(batch_df):
                if kind == "publish" and keys is not None and self._key_field is not None:
                    self.topic.publish_many(messages, key_values=keys)
                elif kind == "publish":
                    self.topic.publish_many(messages)
                else:
                    for message in messages:
                        self.topic.sow_delete_by_data(message)
        # the data first, then the progress record: a crash in between replays the batch
        self._progress["batch_id"] = batch_id
        self.store.flush()

    def _messages(self, batch_df: DataFrame) -> DataFrame:
        """``batch_df`` as two columns: the message (str or bytes) and the delete flag.

        One ``selectExpr`` call (a single round trip to the JVM, where building the
        same projection from ``Column`` objects takes one per column).
        """
        cols = batch_df.columns
        for name in (self.message_column, self.delete_column):
            if name is not None and name not in cols:
                raise ConfigError("column", f"{name!r} is not among the columns {cols!r}")
        if self.message_column is not None:
            kind = batch_df.schema[self.message_column].dataType
            if not isinstance(kind, T.StringType | T.BinaryType):
                raise ConfigError(
                    self.message_column, f"a message column must be string or binary, not {kind}"
                )
            message = _quoted(self.message_column)
        else:
            payload = ", ".join(_quoted(c) for c in cols if c != self.delete_column)
            # NULL fields are left out whatever spark.sql.jsonGenerator.ignoreNullFields says
            message = f"CAST(to_json(struct({payload}), map('ignoreNullFields', 'true')) AS BINARY)"
        deleted = (
            f"coalesce(CAST({_quoted(self.delete_column)} AS BOOLEAN), false)"
            if self.delete_column is not None
            else "false"
        )
        return batch_df.selectExpr(f"{message} AS {_MSG}", f"{deleted} AS {_DEL}")

    def _rendered(
        self, batch_df: DataFrame
    ) -> Iterator[tuple[list[Any], list[bool], list[Any] | None]] | None:
        """``(messages, delete flags, key values)`` chunks rendered in the driver.

        The JSON path for flat rows of plain columns and a boolean ``delete_column``:
        the micro-batch is collected as it is, with no projection to plan, and each
        Arrow record batch becomes JSON text in Arrow kernels (:mod:`.render`). When
        the topic's key is one top-level field held by a string or integer column,
        that column's values go along, so the topic need not parse them back out of
        the JSON. None for any other batch (and for a topic of another message type,
        or a frame with two columns of one name), which then takes Spark's
        ``to_json`` (:meth:`_messages`).
        """
        if self.message_column is not None or self.topic.message_type != "json":
            return None
        fields = batch_df.schema.fields
        if len({f.name for f in fields}) != len(fields):
            return None  # duplicate column names: Spark's path reports the ambiguity
        payload = [i for i, f in enumerate(fields) if f.name != self.delete_column]
        flag = [i for i, f in enumerate(fields) if f.name == self.delete_column]
        if self.delete_column is not None and (
            len(flag) != 1 or not isinstance(fields[flag[0]].dataType, T.BooleanType)
        ):
            return None  # absent, ambiguous or to be cast: Spark's path says or does so
        if not renders([fields[i] for i in payload]):
            return None
        batches = _arrow_batches(batch_df, self.stream_partitions)
        if batches is None:
            return None
        names = [fields[i].name for i in payload]
        key = [i for i in payload if fields[i].name == self._key_field]
        if len(key) != 1 or not isinstance(fields[key[0]].dataType, _KEY_TYPES):
            key = []  # no key column whose values read back as they are from the JSON
        return _rendered_chunks(
            batches, names, payload, flag[0] if flag else None, key[0] if key else None
        )

    def _runs(self, batch_df: DataFrame) -> Iterator[tuple[str, list[Any], list[Any] | None]]:
        """Consecutive rows of one kind (publish/delete), at most ``chunk_rows`` each.

        Each run comes with the key field's value per row when every row of it was
        rendered from a key column (see :meth:`_rendered`), else None.
        """
        kind, run, run_keys, keyed = "publish", list[Any](), list[Any](), True
        chunks = self._rendered(batch_df)
        if chunks is None:
            chunks = _chunks(self._messages(batch_df), self.chunk_rows, self.stream_partitions)
        for messages, deleted, keys in chunks:
            if None in messages:
                raise ConfigError(
                    self.message_column or "row", "a row has no message (NULL message column)"
                )
            for flag, start, end in _segments(deleted, len(messages)):
                row_kind = "delete" if flag else "publish"
                if run and row_kind != kind:
                    yield kind, run, run_keys if keyed else None
                    run, run_keys, keyed = [], [], True
                kind = row_kind
                pos = start
                while pos < end:
                    take = min(end - pos, self.chunk_rows - len(run))
                    run.extend(messages[pos : pos + take])
                    if keys is None:
                        keyed = False
                    else:
                        run_keys.extend(keys[pos : pos + take])
                    pos += take
                    if len(run) == self.chunk_rows:
                        yield kind, run, run_keys if keyed else None
                        run, run_keys, keyed = [], [], True
        if run:
            yield kind, run, run_keys if keyed else None

    def close(self) -> None:
        """Flush and close the store (releasing the writer lock); idempotent."""
        if not self.store.closed:
            self._progress.close()
            self.store.close()

    def __enter__(self) -> SowSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SowSink({self.path!r}, {self.topic.name!r}, query_name={self.query_name!r})"


def _top_field(keys: tuple[str, ...]) -> str | None:
    """The field name when ``keys`` is one top-level field (``("/orderId",)``), else None."""
    if len(keys) != 1:
        return None
    steps = FieldPath.parse(keys[0]).steps
    return steps[0].name if len(steps) == 1 and steps[0].index is None else None


def _quoted(column: str) -> str:
    """``column`` as a SQL identifier (backquoted, inner backquotes doubled)."""
    return "`" + column.replace("`", "``") + "`"


def _segments(flags: list[bool], rows: int) -> Iterator[tuple[bool, int, int]]:
    """``(flag, start, end)`` of each run of equal ``flags``; one all-False run when empty."""
    if not flags:
        yield False, 0, rows
        return
    start = 0
    for flag, group in itertools.groupby(flags):
        end = start + sum(1 for _ in group)
        yield flag, start, end
        start = end


def _rendered_chunks(
    batches: Iterator[pa.RecordBatch],
    names: list[str],
    payload: list[int],
    flag: int | None,
    key: int | None,
) -> Iterator[tuple[list[Any], list[bool], list[Any] | None]]:
    """``(messages, delete flags, key values)`` of each record batch, rows rendered as JSON.

    ``delete flags`` is empty when no row of the batch is a delete (NULL is false);
    ``key values`` are column ``key``'s, None without one. The next batch is rendered
    in a worker thread while the caller applies this one (Arrow's kernels release
    the GIL), so at most two rendered batches are held.
    """

    def chunk(batch: pa.RecordBatch) -> tuple[list[Any], list[bool], list[Any] | None]:
        deleted: list[bool] = []
        if flag is not None:
            flags = batch.column(flag).fill_null(False)
            if flags.true_count:
                deleted = flags.to_pylist()
        keys = None
        if key is not None:
            column = batch.column(key)
            text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
            if not text or is_valid_utf8(column):
                keys = column.to_pylist()  # else the topic parses the repaired text
        return json_rows(batch, names, payload), deleted, keys

    with ThreadPoolExecutor(1, thread_name_prefix="sowlib-sink-render") as pool:
        pending: Future[tuple[list[Any], list[bool], list[Any] | None]] | None = None
        for batch in batches:
            ahead = pool.submit(chunk, batch)
            if pending is not None:
                yield pending.result()
            pending = ahead
        if pending is not None:
            yield pending.result()


def _chunks(
    selected: DataFrame, rows: int, stream: bool
) -> Iterator[tuple[list[Any], list[bool], None]]:
    """``(messages, delete flags)`` of :meth:`SowSink._messages`' frame, chunk by chunk.

    ``delete flags`` is empty when no row of the chunk is a delete. Uses
    :func:`_arrow_batches` when the frame is backed by a JVM Dataset, else (Spark
    Connect) ``toLocalIterator`` in chunks of ``rows`` Row objects.
    """
    batches = _arrow_batches(selected, stream)
    if batches is not None:
        for batch in batches:
            flags = batch.column(1)
            any_deleted = flags.true_count > 0
            yield batch.column(0).to_pylist(), flags.to_pylist() if any_deleted else [], None
        return
    rows_iter = selected.toLocalIterator()
    while chunk := list(itertools.islice(rows_iter, rows)):
        messages = [bytes(r[0]) if isinstance(r[0], bytearray) else r[0] for r in chunk]
        flags = [bool(r[1]) for r in chunk]
        yield messages, flags if any(flags) else [], None


def _arrow_batches(df: DataFrame, stream: bool) -> Iterator[pa.RecordBatch] | None:
    """The rows of ``df`` as Arrow record batches, in the frame's order; O(rows).

    Spark serialises each partition to Arrow IPC record batches in the JVM
    (``Dataset.toArrowBatchRdd``, at most ``spark.sql.execution.arrow.maxRecordsPerBatch``
    rows each). By default one Spark job computes every partition in parallel and the
    driver receives them all (the path ``DataFrame.toArrow`` takes) before the first is
    returned. With ``stream`` the partitions are served one at a time, the way
    ``toLocalIterator`` serves pickled rows: one job per partition, the next computed
    while this one is consumed, so the driver holds at most two partitions. None when
    ``df`` has no JVM Dataset (Spark Connect) or the JVM lacks the method.
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return None
    if not stream:
        collected: list[pa.RecordBatch] = df._collect_as_arrow()  # type: ignore[operator]
        return _drained(collected)
    try:
        jrdd = jdf.toArrowBatchRdd()
    except Py4JError:
        return None
    session = df.sparkSession
    large = session.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
    schema = to_arrow_schema(df.schema, prefers_large_types=str(large).lower() == "true")
    jvm = session.sparkContext._jvm
    if jvm is None:
        return None
    sock_info = jvm.PythonRDD.toLocalIteratorAndServe(jrdd, True)
    return (
        pa.ipc.read_record_batch(pa.py_buffer(payload), schema)
        for payload in _local_iterator_from_socket(sock_info, NoOpSerializer())
    )


def _drained(batches: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Yield ``batches`` in order, dropping each from the list as it goes (frees its memory)."""
    batches.reverse()
    while batches:
        yield batches.pop()
