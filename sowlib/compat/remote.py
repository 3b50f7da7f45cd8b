"""Pub/sub topics across processes: the writer's bus, and what a read-only process follows.

A publish to a topic without a SOW reaches the publishing process's listeners in
memory (:class:`~sowlib.compat.hub.Hub`). For listeners in read-only processes of
the same store:

* a topic the transaction log records is followed in the writer's journal (the
  publish is already there, with its bookmark);
* any other topic goes through the store's pub/sub bus
  (:mod:`sowlib.journal.bus`), which the writer appends to and readers follow.

Both are polled by the process's follower thread (:data:`sowlib.topic.follow.FOLLOWER`),
started when the first pub/sub subscription (or bookmark subscription) of a
read-only process needs it. Imports ``journal`` and ``topic.follow``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from sowlib.errors import StoreClosedError
from sowlib.journal import NOW, Entry, FollowedJournal, JournalSubscription, LogTail
from sowlib.journal.bus import PubSubBus, bus_directory
from sowlib.journal.tail import offer_each
from sowlib.topic.follow import FOLLOWER

__all__ = ["BusFeed", "RemoteFeed", "writer_bus"]

logger = logging.getLogger(__name__)
Deliver = Callable[[Entry], object]

_buses: weakref.WeakKeyDictionary[Any, PubSubBus] = weakref.WeakKeyDictionary()
_buses_lock = threading.Lock()


def writer_bus(store: Any, store_path: str, clock: Callable[[], float]) -> PubSubBus:
    """The bus of ``store`` (a writer, in ``store_path``), opened on its first pub/sub
    publish; every hub of the store shares it, and it is closed with the store object
    (a store reopened later opens the bus again).

    Raises:
        StoreClosedError: ``store`` is closed.
    """
    with _buses_lock:
        bus = _buses.get(store)
        if store.closed:  # its bus goes with it (a store reopened opens the bus again)
            if bus is not None:
                del _buses[store]
                bus.close()
            raise StoreClosedError(f"store {store_path}")
        if bus is None:
            bus = _buses[store] = PubSubBus(bus_directory(store_path), clock)
            weakref.finalize(store, bus.close)
        return bus


class BusFeed:
    """A read-only process's end of a store's bus: every publish appended after it
    started, handed to ``deliver`` by :meth:`poll` (the follower thread calls it)."""

    def __init__(
        self, store_path: str, deliver: Deliver, alive: Callable[[], bool], origin: str = ""
    ) -> None:
        self.directory = bus_directory(store_path)
        self.origin = origin  # this process's own relayed publishes are skipped
        self._tail = LogTail.at_end(self.directory)
        self._deliver = deliver
        self._alive = alive
        self._lock = threading.Lock()
        self._closed = False

    def poll(self) -> bool:
        """Deliver what arrived; False once closed (or its store closed)."""
        with self._lock:
            if self._closed or not self._alive():
                self._tail.close()
                return False
            entries = self._tail.poll()
        if self.origin:
            entries = [e for e in entries if e.sow_key != self.origin]
        offer_each(entries, (self._deliver,))
        return True

    @property
    def fd(self) -> int | None:
        """The file descriptor of the bus file being followed (None between files)."""
        return self._tail.fd

    def close(self) -> None:
        """Stop (the next poll releases the file); idempotent."""
        with self._lock:
            self._closed = True


class RemoteFeed:
    """What one read-only hub follows for its pub/sub listeners: the bus, and the
    journal's publishes to topics without a SOW (``is_pubsub``)."""

    def __init__(
        self,
        store_path: str,
        journal: FollowedJournal | None,
        deliver: Deliver,
        is_pubsub: Callable[[str, str], bool],
        alive: Callable[[], bool],
        origin: str = "",
    ) -> None:
        self.bus = BusFeed(store_path, deliver, alive, origin)
        self.journal = journal
        self._sub: JournalSubscription | None = None
        if journal is not None:

            def from_journal(entry: Entry) -> None:
                # a SOW topic's entry carries its key (one created after this process
                # opened the store is not known here yet)
                pubsub = entry.kind == "publish" and not entry.sow_key
                if pubsub and is_pubsub(entry.topic, entry.message_type):
                    deliver(entry)

            self._sub = journal.subscribe(from_journal, ".*", NOW)
        FOLLOWER.follow(self.bus, self.bus.poll, self.bus.directory)
        follow_journal(journal)

    def close(self) -> None:
        """Stop following; idempotent."""
        self.bus.close()
        if self._sub is not None:
            self._sub.unsubscribe()


def follow_journal(journal: object) -> None:
    """Have the follower poll ``journal`` when it is a read-only process's
    (:class:`FollowedJournal`); idempotent."""
    if isinstance(journal, FollowedJournal):
        FOLLOWER.follow(journal, journal.poll, journal.directory)
