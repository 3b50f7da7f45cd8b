"""SowSink: a ``foreachBatch`` sink that applies each micro-batch to a SOW topic exactly once.

Runs in the driver process and holds the store's writer lock. Imports pyspark,
``sowlib.store``, ``sowlib.state`` and ``sowlib.errors``; never ``storage`` internals.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sowlib.errors import ConfigError, StoreClosedError
from sowlib.state import StateStore
from sowlib.store import SowStore
from sowlib.topic import Topic

__all__ = ["PROGRESS_TOPIC", "SowSink"]

#: The topic (keyed on ``/key``) where each sink records its last applied batch id.
PROGRESS_TOPIC = "_sowlib_spark_progress"

_MSG = "__sow_message"
_DEL = "__sow_delete"


class SowSink:
    """Apply streaming micro-batches to a SOW topic; use as ``writeStream.foreachBatch(sink)``.

    Each row becomes one message: the row as a JSON object (every column but
    ``delete_column``; NULL fields are left out), or the value of
    ``message_column`` (str or bytes, in the topic's message type). A row whose
    ``delete_column`` is true deletes the record with its key instead
    (``sow_delete_by_data``). Rows are applied in the order the batch yields them,
    streamed to the driver chunk by chunk (``toLocalIterator``), never collected whole.

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
        chunk_rows: int = 5_000,
    ) -> None:
        if chunk_rows < 1:
            raise ConfigError("chunk_rows", f"{chunk_rows!r} is not a positive number of rows")
        self.path = os.path.abspath(os.fspath(path))
        self.message_column = message_column
        self.delete_column = delete_column
        self.query_name = query_name or topic
        self.chunk_rows = chunk_rows
        self.store = SowStore(self.path)
        try:
            if topic in self.store and keys is None and not create_kwargs:
                self.topic: Topic = self.store.topic(topic, message_type)
            else:
                self.topic = self.store.create_topic(
                    topic, message_type=message_type, keys=keys, **dict(create_kwargs or {})
                )
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
            SowError: a row is not a valid message (the batch stays unrecorded, so
                Spark's retry of the same batch applies it again).
        """
        if self.store.closed:
            raise StoreClosedError(f"sink {self.query_name!r} on {self.path}")
        last = self.last_batch_id
        if last is not None and batch_id <= last:
            return
        for kind, messages in self._runs(batch_df):
            if kind == "publish":
                self.topic.publish_many(messages)
            else:
                for message in messages:
                    self.topic.sow_delete_by_data(message)
        # the data first, then the progress record: a crash in between replays the batch
        self._progress["batch_id"] = batch_id
        self.store.flush()

    def _messages(self, batch_df: DataFrame) -> DataFrame:
        cols = batch_df.columns
        for name in (self.message_column, self.delete_column):
            if name is not None and name not in cols:
                raise ConfigError("column", f"{name!r} is not among the columns {cols!r}")
        if self.message_column is not None:
            message = F.col(f"`{self.message_column}`")
        else:
            payload = [F.col(f"`{c}`") for c in cols if c != self.delete_column]
            message = F.to_json(F.struct(*payload))
        deleted = (
            F.coalesce(F.col(f"`{self.delete_column}`").cast("boolean"), F.lit(False))
            if self.delete_column is not None
            else F.lit(False)
        )
        return batch_df.select(message.alias(_MSG), deleted.alias(_DEL))

    def _runs(self, batch_df: DataFrame) -> Iterator[tuple[str, list[Any]]]:
        """Consecutive rows of one kind (publish/delete), at most ``chunk_rows`` each."""
        kind, run = "publish", list[Any]()
        for row in self._messages(batch_df).toLocalIterator():
            message = row[_MSG]
            if message is None:
                raise ConfigError(
                    self.message_column or "row", "a row has no message (NULL message column)"
                )
            if isinstance(message, bytearray):
                message = bytes(message)
            row_kind = "delete" if row[_DEL] else "publish"
            if run and (row_kind != kind or len(run) >= self.chunk_rows):
                yield kind, run
                run = []
            kind = row_kind
            run.append(message)
        if run:
            yield kind, run

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
