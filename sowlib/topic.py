"""Topic: one SOW topic — publish, delta publish, query, delete, expire, history, replay.

The public API over :class:`~sowlib.topic_core.TopicCore`. Every public method
takes the topic's lock, so many threads may publish and read one topic at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from functools import partial
from itertools import islice
from typing import Any

from sowlib.errors import UnsupportedOperationError
from sowlib.expr import Filter
from sowlib.history import HistoricalSource, Version
from sowlib.keys import validate_user_key
from sowlib.query import QueryOptions, Record, explain, run_query
from sowlib.results import (
    Change,
    DeleteResult,
    PublishResult,
    parse_bookmark,
    split_keys,
    to_corr,
)
from sowlib.storage import RecordKind
from sowlib.subscriptions import Message, Subscription
from sowlib.topic_core import TopicCore
from sowlib.topic_entries import BODY, CORR, EXPIRES, OFFSET, SEQ, STAMP, checkpoint_blob

__all__ = ["Change", "DeleteResult", "PublishResult", "Topic"]

_PUT, _DELETE, _EXPIRE = RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE
_new_record = partial(tuple.__new__, Record)


class Topic(TopicCore):
    """A SOW topic: the latest record per SOW key, persisted in one log.

    Get one from :meth:`SowStore.create_topic` or :meth:`SowStore.topic`.

    Example:
        >>> from sowlib import SowStore
        >>> orders = SowStore().create_topic("orders", keys=["/orderId"])
        >>> orders.publish('{"orderId": 1, "price": 120}').inserted
        True
        >>> len(orders.sow("/price > 100"))
        1
    """

    # ------------------------------------------------------------------ public API

    def publish(
        self,
        data: str | bytes | dict[str, Any] | Any,
        *,
        expiration: float | None = None,
        sow_key: str | None = None,
        correlation_id: str | bytes | None = None,
    ) -> PublishResult:
        """Store ``data`` as the latest record for its key; O(1) plus index upkeep.

        Args:
            data: the message as text, bytes, or a value the codec can encode (a dict).
            expiration: seconds to live, overriding the topic default (0 = never);
                honoured only when the topic has expiration enabled.
            sow_key: the key, for topics without key fields (publisher-supplied keys).
            correlation_id: stored with the record and returned by queries.
        Returns:
            PublishResult(sow_key, seq, inserted).
        Raises:
            DecodeError: malformed message (nothing is stored).
            MissingKeyFieldError: no value for a key field (nothing is stored).
            InvalidSowKeyError: bad or missing publisher key (nothing is stored).
        """
        with self._lock:
            self._check_writable("publish")
            self._tick()
            payload, doc = self._decode_input(data)
            key = self._key(doc, sow_key, data)
            return self._write(key, payload, doc, expiration, to_corr(correlation_id))

    def publish_many(
        self, messages: Iterable[str | bytes | dict[str, Any]], *, expiration: float | None = None
    ) -> Sequence[PublishResult]:
        """Publish several messages; every one is validated before any is stored.

        Raises:
            SowError: the errors of :meth:`publish`; then nothing from the batch is stored.
        """
        return self._publish_many(messages, expiration, None)

    def _publish_rendered(
        self, messages: list[bytes], field: str, values: Sequence[Any]
    ) -> Sequence[PublishResult]:
        """:meth:`publish_many` of messages whose top-level ``field`` holds ``values``.

        For writers that render the messages themselves from columns they hold
        (``sowlib.spark``'s sink): when the topic's key is that one field, the keys
        are hashed from ``values`` instead of being parsed out of each message, so
        the messages are trusted to be valid and to hold exactly those values.
        Otherwise, and for values other than ints and non-empty text, this is
        :meth:`publish_many`.
        """
        return self._publish_many(messages, None, (field, values))

    def _publish_many(
        self,
        messages: Iterable[str | bytes | dict[str, Any]],
        expiration: float | None,
        known: tuple[str, Sequence[Any]] | None,
    ) -> Sequence[PublishResult]:
        with self._lock:
            self._check_writable("publish")
            self._tick()
            self._expires_at(expiration, 0.0)  # validate before anything is written
            if not isinstance(messages, list | tuple):
                messages = list(messages)
            fast = self._publish_batch(messages, expiration, known)
            if fast is not None:
                return fast
            prepared = []
            for data in messages:
                payload, doc = self._decode_input(data)
                prepared.append((self._key(doc, None, data), payload, doc))
            self._expires_at(expiration, 0.0)  # validate before anything is written
            return self._write_many(prepared, expiration)

    def delta_publish(
        self,
        data: str | bytes | dict[str, Any] | Any,
        *,
        expiration: float | None = None,
        sow_key: str | None = None,
        correlation_id: str | bytes | None = None,
    ) -> PublishResult:
        """Merge ``data`` into the stored record for its key (spec §12.1).

        Fields in the delta replace or add; absent fields stay; nested objects
        merge; arrays are replaced. With no stored record the delta is stored
        as is. The expiration is recomputed. The merged record is what is
        stored, indexed and delivered.

        Raises:
            UnsupportedOperationError: the message type has no delta support.
        """
        with self._lock:
            self._check_writable("delta_publish")
            self._tick()
            if not self._codec.supports_delta:
                raise UnsupportedOperationError(
                    "delta_publish", f"{self.message_type} messages cannot be merged"
                )
            payload, delta = self._decode_input(data)
            key = self._key(delta, sow_key, data)
            entry = self._entry(key)
            corr = to_corr(correlation_id)
            if entry is not None:
                doc = self._codec.merge(self.doc(key), delta)
                payload = self._codec.encode(doc)
                corr = corr or entry[CORR]
            else:
                doc = delta
            return self._write(key, payload, doc, expiration, corr, delta)

    def get(self, sow_key: str) -> Record | None:
        """The record stored under ``sow_key``, or None; O(1)."""
        # Lock-free fast path: the Record cache only ever holds the live version
        # of a key (writers drop the entry under the lock before changing it), and
        # a dict lookup is atomic, so a hit is what a locked read would have seen
        # just before or after a concurrent write. Topics with pending
        # expirations take the locked path, which expires due records first.
        if not self._expiry and not self._closed:
            records = self._records
            cached = records.get(sow_key)
            if cached is not None:
                return cached
            # A payload this process published is in memory: build the Record
            # without the lock (entries are immutable tuples swapped atomically),
            # its document decoded on first access, and cache it. Writers swap
            # the entry first and then drop the cached Record; re-checking the
            # entry after caching drops a Record that a concurrent write made stale.
            # (A bare offset, a record loaded from a checkpoint and not read
            # since, takes the locked path.)
            entry = self._entries.get(sow_key)
            if type(entry) is tuple and type(body := entry[BODY]) is bytes:
                deferred = self._deferred
                rec = _new_record(
                    (
                        sow_key,
                        body,
                        entry[SEQ],
                        entry[STAMP],
                        entry[EXPIRES] or None,
                        self.name,
                        self.message_type,
                        entry[CORR],
                        body if deferred is None else deferred,
                    )
                )
                records[sow_key] = rec
                # Read the attribute again: compaction swaps in a new key map.
                if self._entries.get(sow_key) is not entry:
                    records.pop(sow_key, None)
                return rec
        with self._lock:
            self._check_open()
            self._tick()
            return self.record(sow_key)

    def key_for(self, message: str | bytes | dict[str, Any] | Any) -> str:
        """The SOW key ``message`` would be stored under (without storing it)."""
        with self._lock:
            self._check_open()
            _, doc = self._decode_input(message)
            return self._key(doc, None, message)

    def sow(
        self,
        filter: str | Filter | None = None,
        *,
        order_by: str | None = None,
        top_n: int | None = None,
        skip_n: int | None = None,
        sow_keys: Sequence[str] | str | None = None,
        bookmark: int | float | str | datetime | None = None,
        select: str | None = None,
        batch_size: int = 10,
    ) -> list[Record]:
        """Query the topic: records matching ``filter`` (all when None).

        Args:
            filter: an AMPS filter expression.
            order_by: ``"/price DESC, /id"``; results are unordered without it.
            top_n: at most this many records.
            skip_n: skip this many records first (needs top_n).
            sow_keys: restrict to these keys (a list or a comma-separated string).
            bookmark: a sequence number, epoch seconds, a datetime or an AMPS
                timestamp (``20240301T090000Z``): answer as of that point (history topics;
                ignored without history, as in AMPS).
            select: a select list such as ``"[-/,+/id]"``.
        Returns:
            A list of :class:`Record`.
        Raises:
            FilterError: a bad filter.
            QueryOptionError: a bad query option.
        """
        options = QueryOptions.make(
            order_by=order_by, top_n=top_n, skip_n=skip_n, select=select, batch_size=batch_size
        )
        keys = split_keys(sow_keys)
        with self._lock:
            self._check_open()
            self._tick()
            flt = self._compile(filter)
            self._counts["queries"] += 1
            if bookmark is not None and self._history is not None:
                return run_query(self._as_of(bookmark), flt, options, keys)
            top = options.top_n
            if self._is_peek(flt, keys, options) and top is not None:
                # The first top_n records, unordered: only those are read, without
                # decoding and indexing the whole topic.
                return run_query(self, None, options, list(islice(self._entries, top)))
            self._ensure_indexed()
            return run_query(self, flt, options, keys)

    def _is_peek(self, flt: Filter | None, keys: list[str] | None, options: QueryOptions) -> bool:
        """A query of the first records of a topic not indexed yet (no filter, keys,
        order or skip; a top_n)."""
        return (
            not self._indexed
            and flt is None
            and keys is None
            and options.order_by is None
            and not options.skip_n
            and options.top_n is not None
        )

    def _as_of(self, bookmark: int | float | str | datetime) -> HistoricalSource:
        assert self._history is not None
        seq, stamp = parse_bookmark(bookmark)
        now = self._clock()
        self._history.trim(now)
        versions = list(self._history.as_of(seq, stamp, now))

        def make(key: str, v: Version) -> Record:
            assert v.offset is not None
            return self._record_of(self._log.read(v.offset))

        return HistoricalSource(self, versions, make)

    def explain(self, filter: str | Filter | None = None, *, sow_keys: Any = None) -> Any:
        """The plan a query with this filter would use (index, candidates)."""
        with self._lock:
            self._check_open()
            self._ensure_indexed()
            return explain(self, self._compile(filter), split_keys(sow_keys))

    def sow_delete(self, filter: str | Filter) -> DeleteResult:
        """Delete every record matching ``filter`` (``"1=1"`` deletes all).

        Returns:
            The number deleted (a :class:`DeleteResult` int with AMPS counts).
        """
        with self._lock:
            self._check_writable("sow_delete")
            self._tick()
            flt = self._compile(filter)
            self._ensure_indexed()
            examined = len(self._entries)
            matched = [r.sow_key for r in run_query(self, flt, QueryOptions())]
            for key in matched:
                entry = self._entry(key)
                assert entry is not None  # matched under the lock
                self._remove(key, entry, _DELETE)
            return DeleteResult(len(matched), len(matched), examined)

    def sow_delete_by_keys(self, sow_keys: Sequence[str] | str) -> DeleteResult:
        """Delete the records with these keys (a list or comma-separated string).

        A well-formed key with no record deletes nothing.

        Raises:
            InvalidSowKeyError: a malformed key (nothing is deleted).
        """
        keys = split_keys(sow_keys) or []
        for key in keys:
            validate_user_key(key)
        with self._lock:
            self._check_writable("sow_delete_by_keys")
            self._tick()
            done = 0
            for key in dict.fromkeys(keys):
                entry = self._entry(key)
                if entry is not None:
                    self._remove(key, entry, _DELETE)
                    done += 1
            return DeleteResult(done, done, len(keys))

    def sow_delete_by_data(self, data: str | bytes | dict[str, Any] | Any) -> DeleteResult:
        """Delete the record ``data`` would replace if it were published.

        Raises:
            UnsupportedOperationError: the topic uses publisher-supplied keys.
        """
        with self._lock:
            self._check_writable("sow_delete_by_data")
            self._tick()
            if self._keygen is None:
                raise UnsupportedOperationError(
                    "sow_delete_by_data",
                    f"topic {self.name!r} has publisher-supplied keys; use sow_delete_by_keys",
                )
            _, doc = self._decode_input(data)
            key = self._key(doc, None, data)
            entry = self._entry(key)
            if entry is None:
                return DeleteResult(0, 0, 1)
            self._remove(key, entry, _DELETE)
            return DeleteResult(1, 1, 1)

    def subscribe(
        self,
        callback: Callable[[Message], object],
        filter: str | Filter | None = None,
        *,
        oof: bool = False,
        delta: bool = False,
        no_empties: bool = False,
        on_error: Callable[[BaseException, Message], object] | None = None,
    ) -> Subscription:
        """Call ``callback`` for every later change that matches ``filter`` (in process)."""
        with self._lock:
            self._check_open()
            flt = self._compile(filter)
            self._ensure_indexed()
            return self._subs.add(
                callback, flt, oof=oof, delta=delta, no_empties=no_empties, on_error=on_error
            )

    def sow_and_subscribe(
        self,
        callback: Callable[[Message], object],
        filter: str | Filter | None = None,
        *,
        oof: bool = False,
        delta: bool = False,
        no_empties: bool = False,
        on_error: Callable[[BaseException, Message], object] | None = None,
        order_by: str | None = None,
        top_n: int | None = None,
        batch_size: int = 10,
    ) -> Subscription:
        """Deliver the matching records, then every later change — atomically (spec §13.1).

        The query and the subscription happen under the topic's lock, so no
        change falls between them and none is delivered twice.
        """
        options = QueryOptions.make(order_by=order_by, top_n=top_n, batch_size=batch_size)
        with self._lock:
            self._check_open()
            self._tick()
            flt = self._compile(filter)
            self._ensure_indexed()
            initial = run_query(self, flt, options)
            return self._subs.add(
                callback,
                flt,
                oof=oof,
                delta=delta,
                no_empties=no_empties,
                initial=initial,
                on_error=on_error,
            )

    def replay(self, since: int = 0) -> Iterator[Change]:
        """Yield every change still in the log with a sequence number above ``since``.

        Compaction keeps only live records (and, for history topics, the
        window), so older changes may be gone.
        """
        with self._lock:
            self._check_open()
            changes = []
            for rec in self._log.scan():
                if rec.seq <= since:
                    continue
                kind = {_PUT: "publish", _DELETE: "delete", _EXPIRE: "expire"}[rec.kind]
                changes.append(Change(kind, self._record_of(rec)))
        return iter(changes)

    def process_expirations(self) -> int:
        """Expire every record whose time has passed; returns how many."""
        with self._lock:
            self._check_open()
            if not self.config.expiration_enabled:
                return 0
            return self._process_expirations(self._clock())

    def compact(self) -> None:
        """Rewrite the log with only live records (and retained history)."""
        with self._lock:
            self._check_writable("compact")
            self._tick()
            self._compact()

    def stats(self) -> dict[str, Any]:
        """Counters and sizes (spec §16): records, bytes, garbage ratio, indexes, ..."""
        with self._lock:
            self._check_open()
            used = self._log.end_offset
            return {
                "topic": self.name,
                "message_type": self.message_type,
                "path": self._log.path,
                "records": len(self._entries),
                "valid_keys": len(self._entries),
                "file_bytes": self._log.file_size,
                "used_bytes": used,
                "live_bytes": self._live_bytes,
                "garbage_ratio": (1.0 - self._live_bytes / used) if used else 0.0,
                "indexes": self.indexes.names(),
                "expirations_pending": len(self._expiry),
                "history_window": self.config.history_window,
                "history_granularity": self.config.history_granularity,
                "last_seq": self._log.last_seq,
                "subscriptions": self._subs.count if hasattr(self._subs, "count") else None,
                **self._counts,
            }

    def refresh(self) -> int:
        """Read-only topics: apply what the writer appended since; returns records applied."""
        with self._lock:
            self._check_open()
            records = self._log.refresh()
            if records is None:
                return -1
            for rec in records:
                self._apply(rec)
            self._tick()
            return len(records)

    def flush(self) -> None:
        """Make every returned publish survive power loss (msync + fsync)."""
        with self._lock:
            self._check_open()
            if not self._readonly:
                self._log.flush()

    def check(self) -> None:
        """Assert every invariant of the topic and its log (backs ``sowlib verify``)."""
        with self._lock:
            self._check_open()
            self._log.check()
            for key, slot in self._entries.items():
                rec = self._log.read(slot if isinstance(slot, int) else slot[OFFSET])
                assert rec.key == key, f"entry {key!r} points at {rec!r}"
                assert rec.kind == _PUT, f"entry {key!r} points at a tombstone"
                if not isinstance(slot, int):
                    assert rec.seq == slot[SEQ], f"entry {key!r} seq {slot[SEQ]} != {rec.seq}"
            if self._history is None:
                live = sum(map(self._slot_size, self._entries.values()))
                assert live == self._live_bytes, f"live bytes {self._live_bytes} != {live}"

    def close(self) -> None:
        """Write a checkpoint (writers) and close the log; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            checkpoint = None
            if not self._readonly and self._history is None:
                checkpoint = checkpoint_blob(self._entries, self._live_bytes)
            self._log.close(checkpoint)
            self._docs.clear()
            self._records.clear()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __len__(self) -> int:
        with self._lock:
            self._check_open()
            self._tick()
            return len(self._entries)

    def __contains__(self, sow_key: object) -> bool:
        with self._lock:
            self._check_open()
            self._tick()
            return sow_key in self._entries

    def __iter__(self) -> Iterator[Record]:
        """Iterate over a snapshot of every live record."""
        with self._lock:
            self._check_open()
            self._tick()
            return iter([self._record(k, e) for k in list(self._entries) if (e := self._entry(k))])

    def __repr__(self) -> str:
        return f"<Topic {self.name!r} ({self.message_type}) records={len(self._entries)}>"
