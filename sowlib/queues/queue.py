"""One AMPS message queue over a transaction log: leases, acknowledgements, redelivery.

The queue holds no copy of a message: it follows the :class:`~sowlib.journal.Journal`
(every publish to the underlying topic enters the queue) and keeps, per message,
who leases it and until when. What left the queue is written to its
:class:`~sowlib.queues.acks.AckLog`, so a reopened queue holds exactly the
messages not yet consumed. Leases are checked on every call that touches the
queue and by :meth:`Queue.tick` (no timer thread). Imports ``errors``, ``codecs``,
``expr``, ``config.queues``, ``journal`` and its own package.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from sowlib.codecs import get_codec
from sowlib.config.queues import QueueDef
from sowlib.errors import QueryOptionError, StoreClosedError
from sowlib.expr import Filter, compile_filter
from sowlib.journal import EPOCH, Entry, Journal, format_bookmark, parse_bookmark
from sowlib.queues.acks import AckLog, state_path
from sowlib.queues.fairness import choose

__all__ = ["Consumer", "Delivery", "Queue"]

logger = logging.getLogger(__name__)
_orders = itertools.count(1)
#: An expiration below this is a lifetime in seconds, not a time since the epoch.
_LIFETIME_LIMIT = 1e9


@attrs.frozen
class Delivery:
    """A message a queue delivered: ``bookmark`` acknowledges it (:meth:`Queue.ack`).

    ``lease_until`` is when the lease ends (None: at-most-once, nothing to
    acknowledge); ``deliveries`` counts deliveries of this message, this one included.
    """

    queue: str
    entry: Entry
    bookmark: str
    lease_until: float | None
    deliveries: int
    consumer: str


@attrs.define(eq=False)
class _Item:
    entry: Entry
    bookmark: str
    deadline: float | None
    lessee: Consumer | None = None
    lease_until: float = 0.0
    deliveries: int = 0
    cancels: int = 0
    doc: Any = None


class Consumer:
    """A subscription to a queue; :meth:`close` returns its leased messages."""

    def __init__(
        self,
        queue: Queue,
        callback: Callable[[Delivery], object],
        flt: Filter | None,
        backlog: int | None,
        name: str,
    ) -> None:
        self.queue: Queue | None = queue
        self.callback = callback
        self.filter = flt
        self.backlog = backlog
        self.name = name
        self.order = next(_orders)
        self.leased: set[int] = set()

    @property
    def free(self) -> int:
        """Free backlog slots (a large number without a limit)."""
        return 1 << 30 if self.backlog is None else self.backlog - len(self.leased)

    @property
    def closed(self) -> bool:
        return self.queue is None

    def close(self) -> None:
        """End the subscription; its leased messages go back to the queue. Idempotent."""
        queue, self.queue = self.queue, None
        if queue is not None:
            queue.remove_consumer(self)


class Queue:
    """The queue ``definition`` over ``journal`` (which must record its underlying topic).

    Args:
        journal: the transaction log; the queue's state file lives in its directory.
        definition: the queue (:class:`~sowlib.config.queues.QueueDef`).
        clock: the time source for leases and expiration (tests inject one).
        sync: fsync every acknowledgement.
    Raises:
        NotJournaledError: the journal does not record the underlying topic.
        CorruptRecordError: a damaged queue state file.
    """

    def __init__(
        self,
        journal: Journal,
        definition: QueueDef,
        *,
        clock: Callable[[], float] = time.time,
        sync: bool = False,
    ) -> None:
        self.definition = definition
        self.name = definition.name
        self.message_type = definition.message_type
        self.journal = journal
        self.clock = clock
        self._lock = threading.RLock()
        self._items: dict[int, _Item] = {}
        self._consumers: list[Consumer] = []
        self._last = 0  # order of the consumer served last (round-robin)
        self._pumping = False
        self._filter = compile_filter(definition.filter) if definition.filter else None
        newest = journal.position(journal.last_bookmark()).after
        start = newest if definition.recovery_point.lower() == "now" else 0
        self._acks = AckLog(
            state_path(journal.directory, self.name, self.message_type), start, sync=sync
        )
        mark = format_bookmark(journal.id, self._acks.start) if self._acks.start else EPOCH
        self._subs = [
            journal.subscribe(self._arrive, topic, mark, message_type=self.message_type)
            for topic in self._sources(journal, definition)
        ]
        if len(self._acks.removed) > 1024:  # drop what no message left in the log needs
            floor = min(self._items, default=newest + 1) - 1
            self._acks.compact(floor)

    @staticmethod
    def _sources(journal: Journal, definition: QueueDef) -> list[str]:
        """The underlying topic, and the queue's own name when the journal records it: a
        publish to the queue topic itself enters the queue too [D] (AMPS's sample
        configuration has its queue publisher publish to the queue's name)."""
        topics = [definition.topic]
        own = definition.name
        if own != definition.topic and journal.covers(own, definition.message_type):
            try:
                covered = re.fullmatch(definition.topic, own) is not None
            except re.error:
                covered = False
            if not covered:  # else the underlying pattern already brings them
                topics.append(own)
        return topics

    # ------------------------------------------------------------------ arriving

    def _arrive(self, entry: Entry) -> None:
        if entry.kind != "publish" or entry.seq in self._acks.removed:
            return
        if self._filter is not None and self._filter.matches(self._decode(entry)) is not True:
            return
        item = _Item(entry, format_bookmark(self.journal.id, entry.seq), self._deadline(entry))
        with self._lock:
            self._items[entry.seq] = item
        if self._consumers:
            self.pump()

    def _decode(self, entry: Entry) -> Any:
        return get_codec(entry.message_type).decode(entry.data)

    def _deadline(self, entry: Entry) -> float | None:
        ends = []
        if entry.expiration is not None:
            ex = entry.expiration
            ends.append(entry.timestamp + ex if ex < _LIFETIME_LIMIT else ex)
        if self.definition.expiration is not None:
            ends.append(entry.timestamp + self.definition.expiration)
        return min(ends) if ends else None

    # ------------------------------------------------------------------ consumers

    def subscribe(
        self,
        callback: Callable[[Delivery], object],
        filter: str | Filter | None = None,
        *,
        max_backlog: int | None = 1,
        name: str = "",
    ) -> Consumer:
        """Deliver messages to ``callback`` (with a :class:`Delivery`) as they become free.

        ``max_backlog`` (default 1) caps the messages leased to this subscription at
        once; the queue's ``MaxPerSubscriptionBacklog`` lowers it. Messages waiting in
        the queue are delivered before this returns (by the thread already
        delivering, if another one is).

        Raises:
            FilterError: a bad filter. QueryOptionError: a backlog below 1.
        """
        if max_backlog is not None and max_backlog < 1:
            raise QueryOptionError("max_backlog", max_backlog, "expected a positive integer")
        cap = self.definition.max_per_subscription_backlog
        backlog = max_backlog if cap is None else min(cap, max_backlog or cap)
        flt = compile_filter(filter) if isinstance(filter, str) and filter else None
        if isinstance(filter, Filter):
            flt = filter
        with self._lock:
            self._check_open()
            consumer = Consumer(self, callback, flt, backlog, name)
            self._consumers.append(consumer)
        self.pump()
        return consumer

    def remove_consumer(self, consumer: Consumer) -> None:
        """Forget ``consumer`` and return its leased messages (use :meth:`Consumer.close`)."""
        with self._lock:
            self._consumers = [c for c in self._consumers if c is not consumer]
            for seq in sorted(consumer.leased):
                item = self._items.get(seq)
                if item is not None and item.lessee is consumer:
                    self._release(item)
            consumer.leased.clear()
        self.pump()

    # ------------------------------------------------------------------ acknowledging

    def ack(self, bookmarks: str | Iterable[str], options: str | None = None) -> int:
        """Acknowledge messages by bookmark (a comma-separated list or an iterable).

        No option: the message is consumed (removed). ``cancel``: it goes back to the
        queue for redelivery. ``expire``: it is removed as expired. A bookmark of a
        message no longer in the queue is ignored. Returns how many were found.

        Raises:
            QueryOptionError: a malformed bookmark or an unknown option.
        """
        option = (options or "").strip().lower()
        if option not in ("", "cancel", "expire"):
            raise QueryOptionError("options", options, "expected cancel or expire")
        marks = bookmarks.split(",") if isinstance(bookmarks, str) else list(bookmarks)
        seqs = [parse_bookmark(m, self.journal.id).after for m in marks if m.strip()]
        found = 0
        with self._lock:
            self._check_open()
            for seq in seqs:
                item = self._items.get(seq)
                if item is None:
                    continue
                found += 1
                if option == "cancel":
                    item.cancels += 1
                    limit = self.definition.max_cancels
                    if limit is not None and item.cancels >= limit:
                        self._remove(item, "x")
                    else:
                        self._release(item)
                else:
                    self._remove(item, "x" if option == "expire" else "a")
        self.pump()
        return found

    # ------------------------------------------------------------------ reading

    def browse(self, filter: str | None = None) -> list[Delivery]:
        """The messages available now (not leased), oldest first; nothing is leased."""
        flt = compile_filter(filter) if filter else None
        self.tick()
        with self._lock:
            items = [i for i in self._items.values() if i.lessee is None]
        return [
            Delivery(self.name, item.entry, item.bookmark, None, item.deliveries, "")
            for item in items
            if flt is None or flt.matches(self._doc(item)) is True
        ]

    def __len__(self) -> int:
        """Messages in the queue, leased or not."""
        return len(self._items)

    @property
    def leased(self) -> int:
        """Messages leased to subscribers now."""
        with self._lock:
            return sum(1 for i in self._items.values() if i.lessee is not None)

    def tick(self, now: float | None = None) -> int:
        """End due leases, remove expired messages and deliver; returns deliveries made."""
        return self.pump(now)

    # ------------------------------------------------------------------ machinery

    def _doc(self, item: _Item) -> Any:
        if item.doc is None:
            item.doc = self._decode(item.entry)
        return item.doc

    def _check_open(self) -> None:
        if self.journal.closed:
            raise StoreClosedError(f"queue {self.name}: the transaction log is closed")

    def _release(self, item: _Item) -> None:
        """Return a leased message to the queue (or expire it: MaxDeliveries)."""
        if item.lessee is not None:
            item.lessee.leased.discard(item.entry.seq)
            item.lessee = None
        limit = self.definition.max_deliveries
        if limit is not None and item.deliveries >= limit:
            self._remove(item, "x")

    def _remove(self, item: _Item, kind: str) -> None:
        if item.lessee is not None:
            item.lessee.leased.discard(item.entry.seq)
            item.lessee = None
        if self._items.pop(item.entry.seq, None) is not None:
            self._acks.remove(item.entry.seq, kind)

    def _expire(self, now: float) -> None:
        for item in list(self._items.values()):
            if item.deadline is not None and item.deadline <= now:
                self._remove(item, "x")
            elif item.lessee is not None and item.lease_until <= now:
                self._release(item)

    def _assign(self, now: float, done: set[int]) -> list[tuple[Consumer, Delivery]]:
        """Lease (or hand out) every free message a subscription can take, except
        those already delivered by this pump (``done``)."""
        self._expire(now)
        definition = self.definition
        most_once = definition.semantics == "at-most-once"
        leased = 0 if most_once else self.leased
        out: list[tuple[Consumer, Delivery]] = []
        for item in list(self._items.values()):
            if item.lessee is not None or item.entry.seq in done:
                continue
            if definition.max_backlog is not None and leased >= definition.max_backlog:
                break
            able = [
                c
                for c in self._consumers
                if (most_once or c.free > 0)
                and (c.filter is None or c.filter.matches(self._doc(item)) is True)
            ]
            consumer = choose(definition.fairness, able, self._last)
            if consumer is None:
                continue
            assert isinstance(consumer, Consumer)
            self._last = consumer.order
            item.deliveries += 1
            until: float | None = None
            if most_once:
                self._remove(item, "a")
            else:
                until = now + definition.lease_period
                item.lessee, item.lease_until = consumer, until
                consumer.leased.add(item.entry.seq)
                leased += 1
            delivery = Delivery(
                self.name, item.entry, item.bookmark, until, item.deliveries, consumer.name
            )
            out.append((consumer, delivery))
            done.add(item.entry.seq)
        return out

    def pump(self, now: float | None = None) -> int:
        """Check leases and deliver what can be delivered; returns deliveries made.

        Callbacks run outside the queue's lock; a call made while a pump runs (an ack
        from a handler, a publish from another thread) leaves the work to it: the
        running pump assigns again after every batch and stops only when nothing is
        left to deliver.
        A message goes out once per pump: one cancelled from inside its handler waits
        for the next call that touches the queue, so a handler that always fails
        cannot spin.
        """
        with self._lock:
            if self._pumping:
                return 0  # the running pump takes one more round after every delivery
            self._pumping = True
        made = 0
        done: set[int] = set()
        try:
            while True:
                with self._lock:
                    batch = self._assign(self.clock() if now is None else now, done)
                    if not batch:  # decided and released under one lock: no call is lost
                        self._pumping = False
                        return made
                for consumer, delivery in batch:
                    made += 1
                    try:
                        consumer.callback(delivery)
                    except Exception:
                        logger.exception("queue %s: a subscriber's callback raised", self.name)
                now = None
        except BaseException:
            with self._lock:
                self._pumping = False
            raise

    def close(self) -> None:
        """Stop following the log; every subscription ends (leases are not kept)."""
        for sub in self._subs:
            sub.unsubscribe()
        with self._lock:
            consumers, self._consumers = self._consumers, []
        for consumer in consumers:
            consumer.queue = None

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, messages={len(self._items)}, leased={self.leased})"
