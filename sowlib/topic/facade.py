"""Topic: the public face of one SOW topic — locking and argument checks over its parts.

The by-key reads and the guards are inherited (``keyreads``). The parts: the key map
(``keymap``), the writer (``writer``), records and the cache (``views``, ``cache``),
expiry (``expiry``), the query source (``source``), opening and checkpoints
(``loader``). Every public method takes the topic's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from sowlib.config import TopicConfig
from sowlib.display import topic_html
from sowlib.errors import EncodeError, UnsupportedOperationError
from sowlib.expr import Filter, regex_budget
from sowlib.frames import frame_messages, is_frame, plain
from sowlib.index import IndexSet
from sowlib.keys import validate_user_key
from sowlib.progress import ProgressArg, callback_for, track
from sowlib.query import QueryOptions, Record, run_query
from sowlib.record import passing_doc
from sowlib.results import Change, DeleteResult, PublishResult, split_keys, to_corr
from sowlib.storage import Log, RecordKind
from sowlib.subscriptions import Message, Subscription
from sowlib.topic.carryover import continue_on
from sowlib.topic.checks import check_topic, topic_stats
from sowlib.topic.follow import FOLLOWER, announce_reopen, apply_announced
from sowlib.topic.following import Following
from sowlib.topic.loader import checkpoint_blob, load
from sowlib.topic.parts import build_parts, int_key_format, key_head
from sowlib.topic.queries import Queries

__all__ = ["Topic"]

_PUT, _DELETE, _EXPIRE = RecordKind.PUT, RecordKind.DELETE, RecordKind.EXPIRE
_CHANGE = {_PUT: "publish", _DELETE: "delete", _EXPIRE: "expire"}


class Topic(Queries, Following):
    """A SOW topic: the latest record per SOW key, persisted in one log.

    Get one from :meth:`SowStore.create_topic` or :meth:`SowStore.topic`. Memory is
    the key map and the declared indexes (kept current on every write and saved at
    a clean close) plus a cache of hot records bounded by ``cache_bytes``; payloads
    stay in the log.

    Example:
        >>> from sowlib import SowStore
        >>> orders = SowStore().create_topic("orders", keys=["/orderId"])
        >>> orders.publish('{"orderId": 1, "price": 120}').inserted
        True
        >>> len(orders.sow("/price > 100"))
        1
    """

    def __init__(
        self,
        config: TopicConfig,
        log: Log,
        *,
        clock: Callable[[], float],
        readonly: bool = False,
        key_generator: Callable[[Any], str] | None = None,
        cache_bytes: int | None = None,
        progress: ProgressArg = None,
        reopen: Callable[[], tuple[TopicConfig, Log]] | None = None,
    ) -> None:
        self._clock = clock
        self._readonly = readonly
        self._lock = threading.RLock()
        self._closed = False
        self._key_generator, self._cache_bytes, self._reopen = key_generator, cache_bytes, reopen
        self._wire(config, log, progress)

    def _wire(self, config: TopicConfig, log: Log, progress: ProgressArg) -> None:
        """Build the parts over ``log`` and load them (the constructor, and a reopen)."""
        parts = build_parts(config, log, self._clock, self._key_generator, self._cache_bytes)
        with callback_for(progress, desc=f"rebuild {config.name}") as callback:
            load(parts.writer, callback)
        self.config, self.name, self.message_type = config, config.name, config.message_type
        self._p = parts
        self._prepared = None  # the queries kept for the parts before (see queries.py)
        self.key_fields = parts.key_fields
        self._int_key = int_key_format(parts.content)  # see lookup
        # lookup of one value, get of a SOW key: one C call each (None: the Python path only)
        views, expiry = parts.views, parts.expiry
        self._read_key = views.key_reader(key_head(parts.content), expiry, self._lock)
        self._read_sow_key = views.key_reader(None, expiry, self._lock, sow_keys=True)
        self._point_fronts()
        self._log = log
        self._tick()

    # ------------------------------------------------------------------ guards

    # ------------------------------------------------------------------ writes

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
            data: the message as text, bytes, or a value the codec can encode (a dict;
                pandas/numpy scalars and datetimes are made :func:`sowlib.frames.plain`).
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
            writer = self._p.writer
            plain = sow_key is None and expiration is None and correlation_id is None
            if plain and type(data) is bytes and (done := writer.write_bytes(data)) is not None:
                return done  # the common case (else None: the path below)
            payload, doc = self._decode(data)
            key = writer.key(doc, sow_key, data)
            return writer.write(key, payload, doc, expiration, to_corr(correlation_id))

    def publish_many(
        self,
        messages: Iterable[str | bytes | dict[str, Any]] | Any,
        *,
        expiration: float | None = None,
        key_values: Sequence[Any] | None = None,
        progress: ProgressArg = None,
    ) -> Sequence[PublishResult]:
        """Publish several messages; every one is validated before any is stored.

        Args:
            messages: the messages (text, bytes or dicts), or a ``pandas.DataFrame``: a
                message per row, a field per column, missing cells left out
                (:func:`sowlib.frames.frame_messages`). pandas and numpy values in
                dicts are made plain first (:func:`sowlib.frames.plain`).
            expiration: seconds to live for each (see :meth:`publish`).
            key_values: for writers that render the messages from values they hold
                (``sowlib.spark``'s sink): each message's key-field values (a tuple in key
                order for compound keys), trusted: hashed instead of parsed out.
            progress: ``progress(read, total)`` as messages are read from ``messages``
                (total None for an iterator), True for a bar, or a tqdm bar to advance
                (:mod:`sowlib.progress`).
        Returns:
            One PublishResult per message.
        Raises:
            SowError: the errors of :meth:`publish`; then nothing from the batch is stored.
        """
        with self._lock:
            self._check_writable("publish")
            self._tick()
            self._p.writer.expires_at(expiration, 0.0)  # validate before anything is written
            if is_frame(messages):
                messages = frame_messages(messages)
            if progress is not None:
                messages = track(messages, progress, desc="publish", unit="messages")
            batch = messages if isinstance(messages, list | tuple) else list(messages)
            if not batch:
                return []
            try:
                return self._p.writer.write_many(batch, expiration, key_values)
            except EncodeError:  # pandas/numpy values: made plain, then every codec holds them
                made = [m if isinstance(m, str | bytes) else plain(m) for m in batch]
                return self._p.writer.write_many(made, expiration, key_values)

    def _decode(self, data: object) -> tuple[bytes, Any]:
        """The payload and document of a message, pandas/numpy values made plain."""
        try:
            return self._p.writer.decode_input(data)
        except EncodeError:
            return self._p.writer.decode_input(plain(data))

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
        as is. The expiration is recomputed.

        Raises:
            UnsupportedOperationError: the message type has no delta support.
        """
        with self._lock:
            self._check_writable("delta_publish")
            self._tick()
            codec = self._p.views.codec
            if not codec.supports_delta:
                raise UnsupportedOperationError(
                    "delta_publish", f"{self.message_type} messages cannot be merged"
                )
            writer = self._p.writer
            payload, delta = self._decode(data)
            key = writer.key(delta, sow_key, data)
            stored = self._p.views.record(key)  # None: no record for the key
            corr = to_corr(correlation_id)
            doc = delta
            if stored is not None:
                doc = codec.merge(passing_doc(stored), delta)
                payload = codec.encode(doc)
                corr = corr or stored.correlation_id
            if expiration is None and not corr and writer.plain():
                return writer.put_plain(cast(int, key), payload, doc)
            return writer.write(key, payload, doc, expiration, corr, delta)

    # ------------------------------------------------------------------ reads by key
    # get, lookup, lookup_many, topic[values]: sowlib.topic.keyreads.KeyReads

    def key_for(self, message: str | bytes | dict[str, Any] | Any) -> str:
        """The SOW key ``message`` would be stored under (without storing it)."""
        with self._lock:
            self._check_open()
            _, doc = self._p.writer.decode_input(message)
            return self._p.keys.text_of(self._p.writer.key(doc, None, message))

    # ------------------------------------------------------------------ queries
    # sow, explain: sowlib.topic.queries.Queries

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
        """Call ``callback`` for every later change that matches ``filter``.

        In a read-only process the changes are the writer's, followed on a thread
        (``docs/subscriptions.md``); ``refresh()`` delivers them at once.
        """
        with self._lock:
            self._check_open()
            flt = self._compile(filter)
            self._catch_up()
            sub = self._p.subs.add(
                callback, flt, oof=oof, delta=delta, no_empties=no_empties, on_error=on_error
            )
        self._follow()
        return sub

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
            self._catch_up()
            self._tick()
            flt = self._compile(filter)
            initial = run_query(self._p.source, flt, options)
            sub = self._p.subs.add(
                callback,
                flt,
                oof=oof,
                delta=delta,
                no_empties=no_empties,
                initial=initial,
                on_error=on_error,
            )
        self._follow()
        return sub

    # _catch_up, _follow, _poll, follow: sowlib.topic.following.Following

    # ------------------------------------------------------------------ deletes

    def sow_delete(self, filter: str | Filter) -> DeleteResult:
        """Delete every record matching ``filter`` (``"1=1"`` deletes all).

        Returns:
            The number deleted (a :class:`DeleteResult` int with AMPS counts).
        """
        with self._lock:
            self._check_writable("sow_delete")
            self._tick()
            flt = self._compile(filter)
            examined = len(self._p.keys)
            with regex_budget():
                found = run_query(self._p.source, flt, None)
            matched = [self._p.keys.key_of(r.sow_key) for r in found]
            for key in matched:
                self._p.writer.remove(key, _DELETE)
            return DeleteResult(len(matched), len(matched), examined)

    def sow_delete_by_keys(self, sow_keys: Sequence[str] | str) -> DeleteResult:
        """Delete the records with these keys (a list or comma-separated string).

        A well-formed key with no record deletes nothing.

        Raises:
            InvalidSowKeyError: a malformed key (nothing is deleted).
        """
        texts = split_keys(sow_keys) or []
        for text in texts:
            validate_user_key(text)
        with self._lock:
            self._check_writable("sow_delete_by_keys")
            self._tick()
            done = 0
            for text in dict.fromkeys(texts):
                key = self._p.keys.key_of(text)
                if key in self._p.keys:
                    self._p.writer.remove(key, _DELETE)
                    done += 1
            return DeleteResult(done, done, len(texts))

    def sow_delete_by_data(self, data: str | bytes | dict[str, Any] | Any) -> DeleteResult:
        """Delete the record ``data`` would replace if it were published.

        Raises:
            UnsupportedOperationError: the topic uses publisher-supplied keys.
        """
        with self._lock:
            self._check_writable("sow_delete_by_data")
            self._tick()
            writer = self._p.writer
            if writer.keygen is None:
                raise UnsupportedOperationError(
                    "sow_delete_by_data",
                    f"topic {self.name!r} has publisher-supplied keys; use sow_delete_by_keys",
                )
            _, doc = writer.decode_input(data)
            key = writer.key(doc, None, data)
            if key not in self._p.keys:
                return DeleteResult(0, 0, 1)
            writer.remove(key, _DELETE)
            return DeleteResult(1, 1, 1)

    # ------------------------------------------------------------------ log and lifecycle

    def replay(self, since: int = 0) -> Iterator[Change]:
        """Yield every change still in the log with a sequence number above ``since``.

        Compaction keeps only live records (and, for history topics, the
        window), so older changes may be gone.
        """
        with self._lock:
            self._check_open()
            of_log = self._p.views.of_log
            scan = self._log.scan()
            changes = [Change(_CHANGE[r.kind], of_log(r)) for r in scan if r.seq > since]
        return iter(changes)

    def process_expirations(self) -> int:
        """Expire every record whose time has passed; returns how many."""
        with self._lock:
            self._check_open()
            if not self.config.expiration_enabled:
                return 0
            return self._expire(self._clock())

    def compact(self, progress: ProgressArg = None) -> None:
        """Rewrite the log with only live records (and retained history); O(file size).

        Args:
            progress: ``progress(copied, total)`` as records are copied, True for a
                bar, or a tqdm bar to advance (:mod:`sowlib.progress`).
        """
        with self._lock:
            self._check_writable("compact")
            self._tick()
            with callback_for(progress, desc=f"compact {self.name}") as callback:
                self._p.writer.compact(cast("Callable[[int, int | None], None]", callback))

    def stats(self) -> dict[str, Any]:
        """Counters and sizes (spec §16): records, bytes, garbage ratio, indexes, ..."""
        with self._lock:
            self._check_open()
            if self._materialize is not None:  # a lazily written view: its records now
                self._materialize()
            return topic_stats(self._p, self.config)

    @property
    def indexes(self) -> IndexSet:
        """The topic's indexes (a refresh's upkeep left waiting is done first)."""
        with self._lock:
            self._p.indexes.settle()
            return self._p.indexes

    def refresh(self) -> int:
        """Read-only topics: apply what the writer appended since; returns records applied.

        When the writer replaced the file (a compaction), this topic continues on the
        new file, the same object with its subscriptions (every record of the new file
        counts as applied); without a way to reopen (a topic made by hand), -1.
        """
        with self._lock:
            self._check_open()
            entries, reopen = self._log.refresh(), self._reopen
            if entries is None:
                if reopen is None:
                    return -1
                # the writer replaced the file (compaction): this handle continues on it
                old, before = self._log, self._p
                config, log = reopen()
                if config == self.config and continue_on(self._p, old, log):
                    self._tick()
                    return len(self._p.keys)
                self._wire(config, log, None)
                self._p.subs = self._p.writer.subs = before.subs
                if before.subs.active:  # announce what changed, by key and sequence number
                    announce_reopen(before, self._p, self._clock())
                old.close(None)
                return len(self._p.keys)
            if self._p.subs.active:
                apply_announced(self._p, entries.records(self._log.path))
            else:
                self._p.writer.apply_entries(entries)
            self._tick()
            return len(entries)

    def flush(self) -> None:
        """Make every returned publish survive power loss (msync + fsync)."""
        with self._lock:
            self._check_open()
            if not self._readonly:
                self._log.flush()

    def check(self) -> None:
        """Assert every invariant of the topic, its log and its indexes (``sowlib verify``).

        The indexes are compared with indexes rebuilt from the records; O(records).
        """
        with self._lock:
            self._check_open()
            check_topic(self._p)

    def close(self) -> None:
        """Write a checkpoint with the key map and indexes (writers); close; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._read_key = self._read_sow_key = None
            self._closed = True
            self._point_fronts()
            blob = None
            try:
                if not self._readonly and self._p.history is None:
                    blob = checkpoint_blob(self._p.writer)
            finally:  # the log (and its lock) is closed whatever the checkpoint raised
                self._log.close(blob)
                self._p.cache.clear()
        FOLLOWER.unfollow(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def path(self) -> str:
        """The topic's log file (``"<memory>"`` for a transient topic)."""
        return str(self._log.path)

    def __len__(self) -> int:
        with self._lock:
            self._check_open()
            self._tick()
            return len(self._p.keys)

    def __contains__(self, sow_key: object) -> bool:
        with self._lock:
            self._check_open()
            self._tick()
            return self._key_of(sow_key) in self._p.keys

    def __iter__(self) -> Iterator[Record]:
        """Iterate over a snapshot of every live record."""
        with self._lock:
            self._check_open()
            self._tick()
            return iter(self._p.views.records(self._p.keys.keys()))

    def __repr__(self) -> str:
        return f"<Topic {self.name!r} ({self.message_type}) records={len(self._p.keys)}>"

    def _repr_html_(self) -> str:
        """The notebook view: configuration, record count, indexes, a few records."""
        return topic_html(self)
