"""Queue consumers of the AMPS ``Client``: subscribe to a queue, ``ack``, ``sow`` on a queue.

A base class of :class:`sowlib.compat.subscribe.Subscriber`. A topic name that is
a queue of the store's transaction log (``<Queue>`` in the configuration, or
:func:`sowlib.queues.open_queue`) gets queue semantics: each message goes to one
subscription, which holds a lease on it until ``Message.ack()`` (or
``client.ack``), ``ack("cancel")`` returns it. With auto-ack, a handler that
returns acknowledges its message and one that raises cancels it. Imports
``compat`` modules and ``queues``.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable
from typing import Any

from sowlib.compat.exceptions import DisconnectedException
from sowlib.compat.hub import Hub
from sowlib.compat.message import Handler, Message
from sowlib.compat.queuelink import RemoteQueue
from sowlib.compat.stream import MessageStream
from sowlib.journal import FollowedJournal
from sowlib.queues import Delivery, Queue, find_queue

__all__ = ["QueueConsumer"]

logger = logging.getLogger(__name__)


class QueueConsumer(abc.ABC):
    """Queue subscriptions and acknowledgements of one client."""

    message_type: str | None

    @abc.abstractmethod
    def _need_hub(self) -> Hub: ...

    @abc.abstractmethod
    def _open(
        self, handler: Handler | None, sub_id: str | None, replace: bool = False
    ) -> tuple[str, Handler, MessageStream | None]: ...

    @abc.abstractmethod
    def _register(self, sub_id: str, stream: MessageStream | None) -> Any: ...

    @abc.abstractmethod
    def _abandon(self, sub_id: str, live: Any) -> None: ...

    @abc.abstractmethod
    def _guarded(self, handler: Handler, sub_id: str) -> Handler: ...

    @abc.abstractmethod
    def get_auto_ack(self) -> bool: ...

    @abc.abstractmethod
    def get_exception_listener(self) -> Callable[[BaseException], object] | None: ...

    def _queue(self, hub: Hub, name: str) -> Queue | RemoteQueue | None:
        """The queue called ``name`` in the connected store's transaction log, if any
        (in a read-only process: the writer's, consumed through it)."""
        if hub.journal is None or not name:
            return None
        if isinstance(hub.journal, FollowedJournal):
            mtype = (self.message_type or "").lower()
            for definition in hub.journal.queue_definitions:
                if definition.name == name and mtype in ("", definition.message_type):
                    return hub.remote_queue(name, definition.message_type)
            return None
        return find_queue(hub.journal, name, self.message_type, hub.store.clock)

    def _queue_message(
        self, queue: Queue | RemoteQueue, delivery: Delivery, command: str, **ids: Any
    ) -> Message:
        entry = delivery.entry
        return Message(
            command,
            queue.name,
            data=entry.data,
            bookmark=delivery.bookmark,
            timestamp=entry.timestamp,
            correlation_id=entry.correlation_id,
            message_type=entry.message_type,
            lease_until=delivery.lease_until,
            acker=lambda message, options=None: queue.ack(message.get_bookmark(), options),
            **ids,
        )

    def _queue_browse(
        self, queue: Queue | RemoteQueue, flt: str | None, query_id: str
    ) -> list[Message]:
        """A ``sow`` query of a queue: the messages available now, none leased."""
        return [self._queue_message(queue, d, "sow", query_id=query_id) for d in queue.browse(flt)]

    def _queue_subscribe(
        self,
        queue: Queue | RemoteQueue,
        handler: Handler | None,
        a: dict[str, Any],
        opts: dict[str, Any],
        *,
        sow: bool,
    ) -> MessageStream | str:
        """Subscribe to ``queue`` (``max_backlog=N`` in ``opts``, default 1)."""
        sub_id, target, stream = self._open(handler, a.get("sub_id"), bool(opts.get("replace")))
        live = self._register(sub_id, stream)
        guarded = self._guarded(target, sub_id)
        auto = handler is not None and self.get_auto_ack()
        ids = {"sub_id": sub_id, "command_id": sub_id}

        def deliver(delivery: Delivery) -> None:
            if live.closed:
                queue.ack(delivery.bookmark, "cancel")  # closed meanwhile: back to the queue
                return
            message = self._queue_message(queue, delivery, "publish", **ids)
            if not auto or delivery.lease_until is None:
                guarded(message)
                return
            try:
                target(message)
            except Exception as exc:  # AMPS cancels a message whose handler raised
                queue.ack(delivery.bookmark, "cancel")
                self._report(exc, sub_id)
                return
            queue.ack(delivery.bookmark)

        try:
            if sow:
                guarded(Message("group_begin", queue.name, **ids))
                for message in self._queue_browse(queue, a.get("filter"), sub_id):
                    guarded(message)
                guarded(Message("group_end", queue.name, **ids))
            consumer = queue.subscribe(
                deliver, a.get("filter"), max_backlog=opts.get("max_backlog", 1), name=sub_id
            )
        except BaseException:
            self._abandon(sub_id, live)
            raise
        live.add(consumer.close)
        return stream if stream is not None else sub_id

    def _report(self, exc: Exception, sub_id: str) -> None:
        listener = self.get_exception_listener()
        if listener is None:
            logger.error("queue subscription %s: message handler raised: %r", sub_id, exc)
            return
        try:
            listener(exc)
        except Exception:
            logger.exception("queue subscription %s: exception listener raised", sub_id)

    def _queue_ack(self, topic: str, bookmark: str, options: str | None) -> bool:
        """Acknowledge ``bookmark`` on ``topic`` if it is a queue; whether it is one."""
        try:
            hub = self._need_hub()
        except DisconnectedException:
            return False  # not connected: no queue to reach (a bookmark ack still records)
        queue = self._queue(hub, topic)
        if queue is None:
            return False
        queue.ack(bookmark, options)
        return True

    def flush_acks(self, timeout: int = 0) -> None:
        """Nothing to flush: an acknowledgement takes effect when it is made."""
        self._need_hub()
