"""One attached store seen as an AMPS server: SOW topics, pub/sub topics, a transaction log.

A publish to a topic with a SOW definition goes to the store; any other publish
is delivered to the matching pub/sub listeners and stored nowhere (spec §6.1).
Imports the public ``store``/``topic``/``journal`` APIs, ``codecs``, ``expr`` and
``compat.exceptions``.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from sowlib.codecs import get_codec
from sowlib.compat.exceptions import BadRegexTopicException, InvalidTopicException
from sowlib.compat.expiry import ExpirySweeper
from sowlib.compat.outlet import Outlet
from sowlib.compat.queuelink import QueueLink, RemoteQueue
from sowlib.compat.relay import OutboxServer, serve_outbox
from sowlib.compat.remote import RemoteFeed, writer_bus
from sowlib.errors import UnknownTopicError
from sowlib.expr import Filter
from sowlib.journal import Entry, FollowedJournal, Journal
from sowlib.queues import Queue, find_queue
from sowlib.results import PublishResult
from sowlib.store import SowStore
from sowlib.subscriptions import Message as Event
from sowlib.topic import Topic

__all__ = ["Hub", "Listener", "is_regex"]

logger = logging.getLogger(__name__)
_REGEX_CHARS = re.compile(r"[*+?\[\](){}^$|\\]|\.[*+?]")


def is_regex(topic: str) -> bool:
    """Whether AMPS would read ``topic`` as a regular expression (metacharacters beyond ``.``).

    Example:
        >>> is_regex("orders.eu"), is_regex("orders.*"), is_regex("^ord")
        (False, True, True)
    """
    return bool(_REGEX_CHARS.search(topic))


def compile_topic(topic: str) -> re.Pattern[str]:
    """Compile a regular-expression topic.

    Raises:
        BadRegexTopicException: it does not compile.
    """
    try:
        return re.compile(topic)
    except re.error as exc:
        raise BadRegexTopicException(f"bad regular-expression topic {topic!r}: {exc}") from None


@attrs.define(eq=False)
class Listener:
    """A live subscription to pub/sub (non-SOW) topics; :meth:`unsubscribe` ends it."""

    hub: Hub | None = attrs.field(repr=False)
    topic: str
    pattern: re.Pattern[str] | None = attrs.field(repr=False)
    message_type: str | None
    filter: Filter | None = attrs.field(repr=False)
    callback: Callable[[Event], object] = attrs.field(repr=False)
    on_error: Callable[[BaseException, Event], object] | None = attrs.field(
        default=None, repr=False
    )

    def deliver(self, event: Event) -> None:
        """Call the callback; a failing callback never breaks the publisher."""
        try:
            self.callback(event)
        except SystemExit:  # a handler's exit() ends its subscription, as its thread would
            self.unsubscribe()
            raise
        except Exception as exc:
            logger.exception("pub/sub subscription to %r: callback raised", self.topic)
            if self.on_error is not None:
                try:
                    self.on_error(exc, event)
                except Exception:
                    logger.exception("pub/sub subscription to %r: on_error raised", self.topic)

    def wants(self, topic: str, message_type: str) -> bool:
        if self.message_type is not None and self.message_type != message_type:
            return False
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return topic == self.topic

    def unsubscribe(self) -> None:
        hub, self.hub = self.hub, None
        if hub is not None:
            hub.forget(self)


class Hub:
    """The store behind one or more ``connect()`` URIs, with its pub/sub bus and journal.

    Args:
        store: the SOW store.
        journal: an optional transaction log (it starts watching the store's topics);
            None: the journal the store owns (``SowStore.from_config``), if any.
    """

    def __init__(self, store: SowStore, journal: Journal | FollowedJournal | None = None) -> None:
        self.store = store
        self.journal: Journal | FollowedJournal | None = (
            journal if journal is not None else store.journal
        )
        self._lock = threading.RLock()
        self._listeners: tuple[Listener, ...] = ()
        self._remote: RemoteFeed | None = None  # a read-only store's pub/sub following
        self._seq = itertools.count(1)
        self.expiry = ExpirySweeper()
        self.origin = secrets.token_hex(6)  # names this hub's requests to the writer
        self._outlet: Outlet | None = None  # a read-only store's publishes to the writer
        self._link: QueueLink | None = None  # a read-only store's queue subscriptions
        self._server: OutboxServer | None = None  # a writer's: the read-only processes' requests
        if store.path is not None and not store.readonly and not store.closed:
            try:
                self._server = serve_outbox(store, self.relayed, self.find_queue)
            except OSError as exc:  # StorePathError too: the store works, unserved
                logger.warning(
                    "store %s: read-only processes cannot be served: %s", store.path, exc
                )
        if self.journal is not None:
            self.journal.watch(store)

    # ------------------------------------------------------------------ topics

    def sow_topic(self, name: str, message_type: str | None) -> Topic | None:
        """The SOW topic ``name`` of ``message_type``, or None (a pub/sub topic).

        Topics are namespaced by message type, as on an AMPS server: a URI's type
        (``/amps/fix``) reaches only the topic of that type, and a name with no SOW
        topic of that type is a pub/sub topic of that type, even when a topic of
        another type has the name. Without a type (``/amps``) the store decides
        (its only topic of that name, else the json one).
        """
        try:
            topic = self.store.topic(name, message_type)
        except UnknownTopicError:
            return None
        self.expiry.watch(topic)  # its records expire (and OOF) while the program idles
        if self.journal is not None:
            self.journal.watch_topic(topic)
        return topic

    def sow_topics(self, name: str, message_type: str | None) -> list[Topic]:
        """SOW topics for ``name``: the exact topic, else those its regex matches."""
        exact = self.sow_topic(name, message_type)
        if exact is not None:
            return [exact]
        if not is_regex(name):
            return []
        pattern = compile_topic(name)
        found = [
            t
            for t in self.store.topics()
            if pattern.fullmatch(t.name) and (message_type in (None, t.message_type))
        ]
        for topic in found:
            self.expiry.watch(topic)
            if self.journal is not None:
                self.journal.watch_topic(topic)
        return found

    def require_sow(self, name: str, message_type: str | None, command: str) -> list[Topic]:
        """Like :meth:`sow_topics` but a topic without a SOW is an error.

        A store opened read-only is refreshed first: a query answers with the writer's
        state at the time of the call, as a server's SOW would.

        Raises:
            InvalidTopicException: no SOW topic has that name (or matches that regex).
        """
        if self.store.readonly:
            self.store.refresh()
        topics = self.sow_topics(name, message_type)
        if not topics and not is_regex(name):
            raise InvalidTopicException(
                f"{command}: topic {name!r} has no SOW (it is a pub/sub topic here);"
                " define it in the store (create_topic or the <SOW> configuration)"
            )
        return topics

    # ------------------------------------------------------------------ publishing

    def publish(
        self,
        name: str,
        data: bytes,
        message_type: str | None,
        *,
        delta: bool,
        expiration: float | None,
        correlation_id: str | bytes | None,
        sow_key: str | None,
        origin: str = "",
    ) -> tuple[int, str]:
        """Publish to a SOW topic or, without one, to pub/sub listeners.

        In a read-only process a pub/sub publish also goes to the writer's process,
        which publishes it to every other process (:mod:`sowlib.compat.outlet`);
        ``origin`` is the read-only process a writer publishes for (it is not sent
        the bus's copy).

        Returns:
            The sequence number and the bookmark ("" when the topic is not journalled).
        """
        topic = self.sow_topic(name, message_type)
        if topic is not None:
            journalled = self.journal is not None and self.journal.covers(name, topic.message_type)
            with self._lock if journalled else _NOLOCK:
                write = topic.delta_publish if delta else topic.publish
                result: PublishResult = write(
                    data, expiration=expiration, sow_key=sow_key, correlation_id=correlation_id
                )
                mark = self.journal.last_bookmark() if journalled and self.journal else ""
            return int(result.seq), mark
        mtype = (message_type or "json").lower()
        corr = correlation_id.encode() if isinstance(correlation_id, str) else correlation_id
        path = self.store.path
        with self._lock:
            seq, mark, stamp = next(self._seq), "", time.time()
            journalled = self.journal is not None and self.journal.covers(name, mtype)
            if path is not None and self.store.readonly:
                # through the writer, to every other process's subscribers
                self.outlet(path).publish(name, mtype, bytes(data), corr or b"", expiration)
                if journalled:  # this process's subscribers get it from the journal
                    return 0, ""
            elif journalled and self.journal is not None:
                entry = self.journal.record(
                    "publish", name, mtype, data, correlation_id=corr or b"", expiration=expiration
                )
                seq, mark, stamp = entry.seq, self.journal.bookmark(entry), entry.timestamp
            elif path is not None:
                # for subscribers in read-only processes of this store
                bus = writer_bus(self.store, path, self.store.clock)
                bus.append(name, mtype, data, corr or b"", expiration, origin)
        self.deliver(name, mtype, bytes(data), seq, stamp, corr or b"")
        return seq, mark

    def deliver(
        self, name: str, mtype: str, data: bytes, seq: int, stamp: float, corr: bytes
    ) -> None:
        """Hand a pub/sub publish to every listener that wants it (filters judged once
        per message)."""
        listeners = [x for x in self._listeners if x.wants(name, mtype)]
        if not listeners:
            return
        doc: Any = None
        event = Event("publish", name, None, data, seq, stamp, None, corr, None)
        for listener in listeners:
            if listener.filter is not None:
                if doc is None:
                    doc = get_codec(mtype).decode(data)
                if listener.filter.matches(doc) is not True:
                    continue
            listener.deliver(attrs.evolve(event, doc=doc))

    def relayed(self, entry: Entry, origin: str) -> None:
        """Publish what a read-only process of the store asked the writer to publish
        (the outbox server calls it on the follower thread)."""
        self.publish(
            entry.topic,
            entry.data,
            entry.message_type,
            delta=False,
            expiration=entry.expiration,
            correlation_id=entry.correlation_id or None,
            sow_key=None,
            origin=origin,
        )

    def outlet(self, path: str) -> Outlet:
        """This read-only hub's channel to the writer (opened on first use)."""
        with self._lock:
            if self._outlet is None:
                self._outlet = Outlet(path, self.origin)
            return self._outlet

    def find_queue(self, name: str, message_type: str) -> Queue | None:
        """The writer's queue ``name`` (of ``message_type`` when given), else None."""
        journal = self.journal
        if not isinstance(journal, Journal) or journal.closed:
            return None
        return find_queue(journal, name, message_type or None, self.store.clock)

    def remote_queue(self, name: str, message_type: str) -> RemoteQueue:
        """A read-only store: the writer's queue ``name``, consumed through the writer."""
        path = self.store.path
        assert path is not None, "a read-only store has a directory"
        with self._lock:
            if self._link is None:
                self._link = QueueLink(self.outlet(path))
            return RemoteQueue(self._link, name, message_type)

    def _deliver_entry(self, entry: Entry) -> None:
        self.deliver(
            entry.topic,
            entry.message_type,
            entry.data,
            entry.seq,
            entry.timestamp,
            entry.correlation_id,
        )

    def _is_pubsub(self, name: str, mtype: str) -> bool:
        try:
            self.store.topic(name, mtype)
        except UnknownTopicError:
            return True
        return False

    def _store_open(self) -> bool:
        return not self.store.closed

    def follow_remote(self) -> None:
        """A read-only store: start following the writer's pub/sub publishes (the bus
        and the journal) for this hub's listeners; idempotent."""
        path = self.store.path
        if not self.store.readonly or path is None:
            return
        with self._lock:
            if self._remote is None:
                journal = self.journal if isinstance(self.journal, FollowedJournal) else None
                self._remote = RemoteFeed(
                    path,
                    journal,
                    self._deliver_entry,
                    self._is_pubsub,
                    self._store_open,
                    self.origin,
                )

    # ------------------------------------------------------------------ listeners

    def listen(
        self,
        topic: str,
        message_type: str | None,
        flt: Filter | None,
        callback: Callable[[Event], object],
        on_error: Callable[[BaseException, Event], object] | None = None,
    ) -> Listener:
        """Deliver later pub/sub publishes to ``topic`` (a name or a regex) to ``callback``."""
        pattern = compile_topic(topic) if is_regex(topic) else None
        mtype = message_type.lower() if message_type else None
        listener = Listener(self, topic, pattern, mtype, flt, callback, on_error)
        with self._lock:
            self._listeners = (*self._listeners, listener)
        self.follow_remote()
        return listener

    def close(self) -> None:
        """Stop the expiry sweeps and the following (the store stays open: its owner
        closes it)."""
        self.expiry.close()
        remote, self._remote = self._remote, None
        if remote is not None:
            remote.close()
        server, self._server = self._server, None
        if server is not None:
            server.discard(self.relayed)
        link, self._link = self._link, None
        if link is not None:
            link.close()
        outlet, self._outlet = self._outlet, None
        if outlet is not None:
            outlet.close()

    def forget(self, listener: Listener) -> None:
        with self._lock:
            self._listeners = tuple(x for x in self._listeners if x is not listener)


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NOLOCK = _NoLock()
