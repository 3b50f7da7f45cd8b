"""The subscription half of the AMPS ``Client``: subscribe, sow_and_subscribe, bookmarks.

A base class of :class:`sowlib.compat.client.Client`; it reaches the store only
through the hub the client is connected to. Imports ``compat`` modules, ``expr``
and ``journal``.
"""

from __future__ import annotations

import abc
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from sowlib.compat.exceptions import (
    InvalidTopicException,
    SubscriptionAlreadyExistsException,
    UsageException,
    translating,
)
from sowlib.compat.hub import Hub
from sowlib.compat.message import Handler, Message
from sowlib.compat.options import (
    BOOKMARK_SUBSCRIBE,
    SOW_AND_DELTA_SUBSCRIBE,
    SOW_AND_SUBSCRIBE,
    SUBSCRIBE,
    bind_arguments,
    parse_options,
)
from sowlib.compat.queueing import QueueConsumer
from sowlib.compat.stores import BookmarkStore
from sowlib.compat.stream import MessageStream
from sowlib.expr import compile_filter
from sowlib.journal import EPOCH, MOST_RECENT, Entry
from sowlib.results import split_keys
from sowlib.subscriptions import Message as Event
from sowlib.views.query import aggregate_subscription

__all__ = ["Subscriber"]

Closer = Callable[[], object]
logger = logging.getLogger(__name__)


class _Live:
    """One client subscription: registered before its first delivery, so that
    :meth:`Subscriber.unsubscribe` from a handler takes effect at once, even during
    the initial query or a bookmark replay."""

    def __init__(self) -> None:
        self.closed = False
        self._closers: list[Closer] = []

    def add(self, closer: Closer) -> None:
        """Keep ``closer`` for :meth:`close`; run it now if already closed."""
        if self.closed:
            closer()
        else:
            self._closers.append(closer)

    def close(self) -> None:
        self.closed = True
        closers, self._closers = self._closers, []
        for close in closers:
            close()


class Subscriber(QueueConsumer):
    """Subscriptions of one client, by subscription id."""

    message_type: str | None

    def __init__(self) -> None:
        self._sub_lock = threading.Lock()
        self._subs: dict[str, _Live] = {}
        self._streams: dict[str, MessageStream] = {}
        self._bookmarks: dict[str, str] = {}
        # Generated ids count per client, as the real client's do: a program restarted
        # (or a second client of the same program) gets the same first id, so that a
        # bookmark store resumes its MOST_RECENT subscription.
        self._ids = itertools.count(1)
        self.default_max_depth: int | None = None

    @abc.abstractmethod
    def _need_hub(self) -> Hub:
        """The hub of the connected store (raises when not connected)."""

    @abc.abstractmethod
    def get_exception_listener(self) -> Callable[[BaseException], object] | None:
        """The listener told about exceptions raised by message handlers."""

    @abc.abstractmethod
    def get_bookmark_store(self) -> BookmarkStore | None:
        """The store bookmark subscriptions log to and resume from, if one is set."""

    @abc.abstractmethod
    def get_auto_ack(self) -> bool:
        """Whether a handler's return acknowledges a bookmark-subscription message."""

    # ------------------------------------------------------------------ public forms

    @translating
    def subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``subscribe([on_message,] topic, filter=None, options=None, timeout=0, sub_id=None,
        bookmark=None, oof_enabled=False)``: every later matching publish.

        With a ``bookmark`` this is :meth:`bookmark_subscribe`.
        """
        handler, a = bind_arguments(SUBSCRIBE, args, kwargs)
        if a["bookmark"]:
            return self._bookmark(handler, a)
        return self._subscribe(handler, a, sow=False, delta=False)

    @translating
    def delta_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """As :meth:`subscribe`; updates carry the key fields plus the changed fields."""
        handler, a = bind_arguments(SUBSCRIBE, args, kwargs)
        if a["bookmark"]:
            raise UsageException("bookmark subscriptions cannot be delta subscriptions")
        return self._subscribe(handler, a, sow=False, delta=True)

    @translating
    def sow_and_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``sow_and_subscribe([on_message,] topic, filter=None, batch_size=1,
        oof_enabled=False, timeout=0, top_n=None, order_by=None, bookmark=None, options=None)``.

        The query results (between group markers), then every later change, atomically.
        """
        handler, a = bind_arguments(SOW_AND_SUBSCRIBE, args, kwargs)
        return self._subscribe(handler, a, sow=True, delta=False)

    @translating
    def sow_and_delta_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``sow_and_delta_subscribe([on_message,] topic, filter=None, batch_size=1,
        oof_enabled=False, send_empties=False, timeout=0, top_n=None, order_by=None,
        options=None)``: as :meth:`sow_and_subscribe` with delta updates; without
        ``send_empties`` an update that changes nothing is not sent."""
        handler, a = bind_arguments(SOW_AND_DELTA_SUBSCRIBE, args, kwargs)
        a.setdefault("bookmark", None)
        return self._subscribe(handler, a, sow=True, delta=True)

    @translating
    def bookmark_subscribe(self, *args: Any, **kwargs: Any) -> MessageStream | str:
        """``bookmark_subscribe([on_message,] topic, bookmark, filter=None, sub_id=None,
        options=None, timeout=0)``: replay the transaction log, then continue live.

        ``bookmark`` is ``Client.Bookmarks.EPOCH`` (everything retained), ``NOW``
        (live only), ``MOST_RECENT`` (after the last bookmark this client delivered
        or :meth:`ack`-ed for ``sub_id``, else EPOCH), a bookmark from
        ``Message.get_bookmark()`` (resume just after it) or a timestamp
        (``20240131T120000Z``). With ``options="oof"`` deletes and expirations are
        delivered as OOF messages.

        Raises:
            InvalidTopicException: no transaction log, or it does not record ``topic``.
            InvalidBookmarkException: a malformed bookmark.
        """
        handler, a = bind_arguments(BOOKMARK_SUBSCRIBE, args, kwargs)
        return self._bookmark(handler, a)

    @translating
    def unsubscribe(self, sub_id: str | None = None) -> None:
        """Stop the subscription ``sub_id`` (None or ``"all"``: every subscription)."""
        with self._sub_lock:
            ids = list(self._subs) if sub_id in (None, "all") else [str(sub_id)]
            found = [(self._subs.pop(i, None), self._streams.pop(i, None)) for i in ids]
        for live, stream in found:
            if live is not None:
                live.close()
            if stream is not None:
                stream.finish()

    def ack(
        self, message: Message | str, bookmark: str | None = None, options: str | None = None
    ) -> None:
        """Acknowledge a queue message (``options``: ``cancel``, ``expire``), or mark a
        bookmark-subscription message processed (``ack(message)`` or
        ``ack(topic, bookmark)``); ``MOST_RECENT`` resumes after it. With a bookmark
        store, ``ack(message)`` discards the message there."""
        if isinstance(message, Message):
            if self._queue_ack(message.get_topic(), message.get_bookmark(), options):
                return
            sub_id, mark = message.get_sub_id(), message.get_bookmark()
            store = self.get_bookmark_store()
            if store is not None:
                store.discard_message(message)
        else:
            if bookmark and self._queue_ack(str(message), bookmark, options):
                return
            sub_id, mark = str(message), bookmark or ""
        if mark:
            self._bookmarks[sub_id] = mark

    # ------------------------------------------------------------------ machinery

    def _open(
        self, handler: Handler | None, sub_id: str | None, replace: bool = False
    ) -> tuple[str, Handler, MessageStream | None]:
        sub_id = str(sub_id or f"s{next(self._ids)}")
        if sub_id in self._subs:
            if not replace:
                raise SubscriptionAlreadyExistsException(
                    f"subscription id {sub_id!r} is already in use by this client"
                )
            self.unsubscribe(sub_id)
        if handler is not None:
            return sub_id, handler, None
        stream = MessageStream(self.unsubscribe, sub_id).max_depth(self.default_max_depth)
        return sub_id, stream.put, stream

    def _register(self, sub_id: str, stream: MessageStream | None) -> _Live:
        """Register the subscription before anything is delivered to it."""
        live = _Live()
        with self._sub_lock:
            self._subs[sub_id] = live
            if stream is not None:
                self._streams[sub_id] = stream
        return live

    def _abandon(self, sub_id: str, live: _Live) -> None:
        """Undo :meth:`_register` after a failed subscribe: nothing stays registered."""
        with self._sub_lock:
            if self._subs.get(sub_id) is live:
                del self._subs[sub_id]
                self._streams.pop(sub_id, None)
        live.close()

    def _on_error(self) -> Callable[[BaseException, Event], object] | None:
        listener = self.get_exception_listener()
        if listener is None:
            return None
        return lambda exc, _message: listener(exc)

    def _guarded(self, handler: Handler, sub_id: str) -> Handler:
        """``handler`` whose exceptions go to the exception listener (or the log), never
        to the code that delivered the message: a subscription never ends silently."""

        def call(message: Message) -> None:
            try:
                handler(message)
            except Exception as exc:
                listener = self.get_exception_listener()
                if listener is None:
                    logger.exception("subscription %s: message handler raised", sub_id)
                    return
                try:
                    listener(exc)
                except Exception:
                    logger.exception("subscription %s: exception listener raised", sub_id)

        return call

    def _subscribe(
        self,
        handler: Handler | None,
        a: dict[str, Any],
        *,
        sow: bool,
        delta: bool,
        sow_keys: str | None = None,
    ) -> MessageStream | str:
        opts = parse_options(a["options"])
        for name, why in (("select", "select lists on"), ("skip_n", "paginated")):
            if name in opts:
                raise UsageException(f"{why} subscriptions are not available in process")
        grouped = "projection" in opts or "grouping" in opts  # aggregated (sowlib.views)
        if grouped and (not sow or delta):
            raise UsageException("an aggregated subscription is a sow_and_subscribe")
        if a.get("bookmark") and sow:
            raise UsageException(
                "historical sow_and_subscribe is not available in process;"
                " use sow(bookmark=...) and then bookmark_subscribe"
            )
        hub = self._need_hub()
        topic_name = a["topic"]
        queue = self._queue(hub, topic_name)
        if queue is not None:  # a delta subscription to a queue gets whole messages
            return self._queue_subscribe(queue, handler, a, opts, sow=sow)
        topics = hub.sow_topics(topic_name, self.message_type)
        sub_id, target, stream = self._open(handler, a.get("sub_id"), bool(opts.get("replace")))
        keys = set(split_keys(sow_keys) or ()) if sow_keys else None
        markers = ("group_begin", "group_end")
        live = self._register(sub_id, stream)
        guarded = self._guarded(target, sub_id)

        def deliver(event: Event) -> None:
            if live.closed or event.command in markers:
                return  # markers: one pair around every topic's results, below
            if keys is not None and event.sow_key not in keys:
                return
            target(Message.from_event(event, sub_id, command_id=sub_id))

        oof = bool(a.get("oof_enabled") or opts.get("oof"))
        no_empties = bool(opts.get("no_empties")) or (delta and sow and not a.get("send_empties"))
        on_error = self._on_error()
        try:
            if sow:
                guarded(Message("group_begin", topic_name, sub_id=sub_id, command_id=sub_id))
            for topic in topics:
                common: dict[str, Any] = dict(
                    oof=oof, delta=delta, no_empties=no_empties, on_error=on_error
                )
                if grouped:
                    grouping = aggregate_subscription(topic, opts, a["filter"], deliver)
                    live.add(grouping.unsubscribe)
                    continue
                if sow:
                    top_n = opts.get("top_n", a.get("top_n"))
                    sub = topic.sow_and_subscribe(
                        deliver, a["filter"], order_by=a.get("order_by"), top_n=top_n, **common
                    )
                else:
                    sub = topic.subscribe(deliver, a["filter"], **common)
                live.add(sub.unsubscribe)
            if sow and not live.closed:
                guarded(Message("group_end", topic_name, sub_id=sub_id, command_id=sub_id))
            if len(topics) != 1 or topics[0].name != topic_name:
                flt = compile_filter(a["filter"]) if a["filter"] else None
                listener = hub.listen(topic_name, self.message_type, flt, deliver, on_error)
                live.add(listener.unsubscribe)
        except BaseException:
            self._abandon(sub_id, live)
            raise
        return stream if stream is not None else sub_id

    def _bookmark(self, handler: Handler | None, a: dict[str, Any]) -> MessageStream | str:
        hub = self._need_hub()
        journal = hub.journal
        if journal is None:
            raise InvalidTopicException(
                f"bookmark subscription to {a['topic']!r}: the store has no transaction log;"
                " attach(store, uri, journal=Journal(directory, topics))"
            )
        opts = parse_options(a["options"])
        hub.sow_topics(a["topic"], self.message_type)  # start journalling them if needed
        sub_id, target, stream = self._open(handler, a.get("sub_id"), bool(opts.get("replace")))
        store = self.get_bookmark_store()
        bookmark = str(a["bookmark"])
        if bookmark == MOST_RECENT:  # the store's record, else this client's memory
            if store is not None:
                bookmark = store.get_most_recent(sub_id)
            else:
                bookmark = self._bookmarks.get(sub_id, EPOCH)
        live = self._register(sub_id, stream)
        if handler is not None and store is not None and self.get_auto_ack():
            target = self._acking(target)
        guarded = self._guarded(target, sub_id)

        def deliver(entry: Entry) -> None:
            if live.closed:
                return  # unsubscribed, perhaps by a handler during the replay
            mark = journal.bookmark(entry)
            self._bookmarks[sub_id] = mark
            oof = entry.kind != "publish"
            message = Message(
                "oof" if oof else "publish",
                entry.topic,
                data=entry.data,
                sow_key=entry.sow_key or None,
                bookmark=mark,
                timestamp=entry.timestamp,
                expiration=entry.expiration,
                correlation_id=entry.correlation_id,
                reason=("deleted" if entry.kind == "delete" else "expired") if oof else None,
                sub_id=sub_id,
                command_id=sub_id,
                message_type=entry.message_type,
                acker=self.ack,
            )
            if store is not None:
                store.log(message)
            guarded(message)

        try:
            sub = journal.subscribe(
                deliver,
                a["topic"],
                bookmark,
                filter=a["filter"],
                message_type=self.message_type,
                oof=bool(opts.get("oof")),
            )
        except BaseException:
            self._abandon(sub_id, live)
            raise
        live.add(sub.unsubscribe)
        hub.follow_remote()  # a read-only process: the journal's new entries keep coming
        return stream if stream is not None else sub_id

    def _acking(self, handler: Handler) -> Handler:
        """``handler``, then :meth:`ack` of the message it returned from (auto-ack)."""

        def call(message: Message) -> None:
            handler(message)
            self.ack(message)

        return call

    def _subscribe_command(
        self, name: str, handler: Handler | None, f: dict[str, Any], options: str | None
    ) -> MessageStream | str:
        """Run a subscribe-family :class:`Command` (``Client.execute``)."""
        a: dict[str, Any] = {
            "topic": f.get("topic", ""),
            "filter": f.get("filter"),
            "options": options,
            "sub_id": f.get("sub_id") or f.get("command_id"),
            "bookmark": f.get("bookmark"),
            "top_n": f.get("top_n"),
            "order_by": f.get("order_by"),
            "oof_enabled": False,
            "send_empties": False,
        }
        if name == "subscribe" and a["bookmark"]:
            return self._bookmark(handler, a)
        sow = name.startswith("sow_and")
        delta = "delta" in name
        if delta and a["bookmark"]:
            raise UsageException("bookmark subscriptions cannot be delta subscriptions")
        return self._subscribe(handler, a, sow=sow, delta=delta, sow_keys=f.get("sow_keys"))
