"""Consuming a queue from a read-only process, through the writer.

[R] A read-only process cannot lease or acknowledge (both are writes to the queue's
state), so its queue subscriptions are held by the writer's process on its behalf
(:mod:`sowlib.compat.queueserve`): a subscribe, an ack, a cancel and a browse are
requests in the process's outbox channel (:mod:`sowlib.compat.outlet`); the leases
the writer grants come back in the process's inbox, which the process's follower
thread reads (:data:`sowlib.topic.follow.FOLLOWER`) and hands to the
subscription's handler as a queue message (``ack()`` works as in the writer).
The queue's rules are the writer's: one lessee per message, fairness across every
subscriber of every process, backlogs, lease periods, redelivery when a lease ends
or when the process goes away.

A subscribe or a ``sow`` of the queue waits (up to :data:`ANSWER_WAIT` seconds)
for the writer's answer, so an unknown queue or a bad filter raises in the caller;
made from a handler (on the follower thread, which reads the answers) it does not
wait. With no writer serving the store, every request raises
:class:`~sowlib.compat.exceptions.DisconnectedException`. A writer that stops (or
restarts) ends the process's queue subscriptions: their messages stay in the
queue (at-least-once) and a new subscription receives them. Imports ``errors``,
``journal``, ``queues``, ``topic.follow`` and ``compat`` modules.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from sowlib.compat.exceptions import (
    AMPSException,
    CommandException,
    DisconnectedException,
    InvalidTopicException,
    TimedOutException,
)
from sowlib.compat.outlet import Outlet
from sowlib.compat.queueserve import inbox_name, parse, request
from sowlib.compat.relay import server_id
from sowlib.journal import Entry
from sowlib.journal.outbox import ChannelReader, outbox_directory
from sowlib.queues import Delivery
from sowlib.topic.follow import FOLLOWER, THREAD_NAME

__all__ = ["ANSWER_WAIT", "QueueLink", "RemoteConsumer", "RemoteQueue"]

logger = logging.getLogger(__name__)
#: Seconds a subscribe or a browse waits for the writer's answer.
ANSWER_WAIT = 10.0
Callback = Callable[[Delivery], object]


class _Answer:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: str | None = None
        self.items: list[Delivery] = []


class QueueLink:
    """The queue subscriptions of one read-only hub: requests out through ``outlet``,
    answers and leases in through the process's inbox."""

    def __init__(self, outlet: Outlet) -> None:
        self.outlet = outlet
        self.directory = outbox_directory(outlet.store_path)
        self._subs: dict[str, Callback] = {}
        self._answers: dict[str, _Answer] = {}
        self._reader: ChannelReader | None = None
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._closed = False

    def _follow(self) -> None:
        """Read the answers of the writer serving now (a new one answers in a new inbox)."""
        name = inbox_name(self.outlet.channel_name, server_id(self.outlet.store_path))
        with self._lock:
            if self._reader is not None and self._reader.name == name:
                return
            if self._reader is not None:
                self._reader.close()
            self._reader = ChannelReader(self.directory, name)
        FOLLOWER.follow(self, self.poll, self.directory)

    def poll(self) -> bool:
        """Hand what the writer answered to its subscriptions; False once closed."""
        with self._lock:
            reader = self._reader
            if self._closed or reader is None:
                if reader is not None:
                    reader.close()
                return False
            entries = reader.poll()
        for entry in entries:
            try:
                self._dispatch(entry)
            except (ValueError, KeyError, TypeError) as exc:
                logger.error("queue inbox %s: a malformed answer ignored: %r", reader.name, exc)
        return True

    def _dispatch(self, entry: Entry) -> None:
        op, fields = parse(entry.sow_key)
        if op == "delivery":
            sub = str(fields["sub"])
            callback = self._subs.get(sub)
            delivery = _delivery(entry, fields, sub)
            if callback is None:  # unsubscribed meanwhile: back to the queue
                try:
                    self.send(
                        entry.topic, "queue-ack", bookmarks=delivery.bookmark, options="cancel"
                    )
                except DisconnectedException:  # the writer is gone: its lease ends anyway
                    logger.debug("queue %r: a lease not cancelled (no writer)", entry.topic)
                return
            callback(delivery)
            return
        key = str(fields.get("req") if op.startswith("browse") else fields.get("sub"))
        answer = self._answers.get(key)
        if op == "browsed":
            if answer is not None:
                answer.items.append(_delivery(entry, fields, ""))
            return
        error = fields.get("error")
        if answer is not None:
            answer.error = error
            answer.done.set()
        elif error:
            logger.error("queue %r: the writer refused a request: %s", entry.topic, error)

    def send(self, queue: str, op: str, **fields: Any) -> None:
        """Send one queue request. Raises as :meth:`Outlet.send`."""
        self.outlet.send(queue, "", b"", request(op, **fields))

    def ask(self, queue: str, op: str, key: str, **fields: Any) -> _Answer:
        """Send a request and wait for its answer (not on the follower thread).

        Raises:
            TimedOutException: no answer within :data:`ANSWER_WAIT` seconds.
        """
        answer = self._answers[key] = _Answer()
        try:
            self.send(queue, op, **fields)  # it checks that a writer serves: then its id is out
            self._follow()
            if threading.current_thread().name == THREAD_NAME:
                return answer  # from a handler: the answers are read by this thread
            if not answer.done.wait(ANSWER_WAIT):
                raise TimedOutException(
                    f"queue {queue!r}: the writer did not answer within {ANSWER_WAIT}s"
                )
            return answer
        finally:
            self._answers.pop(key, None)

    def subscribe(self, queue: str, sub: str, callback: Callback, body: dict[str, Any]) -> None:
        self._subs[sub] = callback
        try:
            answer = self.ask(queue, "queue-subscribe", sub, sub=sub, **body)
        except BaseException:
            self._subs.pop(sub, None)
            raise
        if answer.error:
            self._subs.pop(sub, None)
            raise _refusal(queue, answer.error)

    def unsubscribe(self, queue: str, sub: str) -> None:
        if self._subs.pop(sub, None) is not None and not self._closed:
            self.send(queue, "queue-unsubscribe", sub=sub)

    def next_id(self) -> str:
        return f"q{next(self._ids)}"

    def close(self) -> None:
        """Stop reading answers (the writer returns the leases once the outbox closes)."""
        with self._lock:
            self._closed = True
            self._subs.clear()


def _delivery(entry: Entry, fields: dict[str, Any], sub: str) -> Delivery:
    message = Entry(
        0,
        float(fields.get("timestamp") or entry.timestamp),
        "publish",
        entry.topic,
        str(fields.get("message_type") or entry.message_type),
        entry.data,
        "",
        entry.correlation_id,
    )
    until = fields.get("lease_until")
    return Delivery(
        entry.topic,
        message,
        str(fields["bookmark"]),
        None if until is None else float(until),
        int(fields.get("deliveries") or 1),
        sub,
    )


def _refusal(queue: str, error: str) -> AMPSException:
    if "no such queue" in error:
        return InvalidTopicException(error)
    return CommandException(f"queue {queue!r}: {error}")


class RemoteConsumer:
    """A queue subscription the writer holds for this process; :meth:`close` ends it
    (the writer returns its leases)."""

    def __init__(self, link: QueueLink, queue: str, sub: str) -> None:
        self.link: QueueLink | None = link
        self.queue = queue
        self.name = sub

    @property
    def closed(self) -> bool:
        return self.link is None

    def close(self) -> None:
        """Idempotent; a writer already gone needs no telling."""
        link, self.link = self.link, None
        if link is not None:
            try:
                link.unsubscribe(self.queue, self.name)
            except DisconnectedException:
                logger.debug("queue %r: unsubscribe not sent (no writer)", self.queue)


class RemoteQueue:
    """The writer's queue ``name`` as a read-only process uses it (the calls of
    :class:`~sowlib.queues.Queue` the client makes)."""

    def __init__(self, link: QueueLink, name: str, message_type: str) -> None:
        self.link = link
        self.name = name
        self.message_type = message_type

    def subscribe(
        self,
        callback: Callback,
        filter: str | None = None,
        *,
        max_backlog: int | None = 1,
        name: str = "",
    ) -> RemoteConsumer:
        """Have the writer lease messages to ``callback`` (see :meth:`Queue.subscribe`).

        Raises:
            InvalidTopicException: the writer has no such queue.
            CommandException: the writer refused it (a bad filter, a bad backlog).
            DisconnectedException: no writer serves the store.
            TimedOutException: the writer did not answer.
        """
        sub = f"{name or 'sub'}.{self.link.next_id()}"
        body = {"filter": filter, "max_backlog": max_backlog}
        self.link.subscribe(self.name, sub, callback, body)
        return RemoteConsumer(self.link, self.name, sub)

    def ack(self, bookmarks: str | Iterable[str], options: str | None = None) -> int:
        """Acknowledge (or ``cancel``/``expire``) messages; carried out by the writer.
        Returns how many bookmarks were sent.

        Raises:
            DisconnectedException: no writer serves the store.
        """
        marks = bookmarks.split(",") if isinstance(bookmarks, str) else list(bookmarks)
        marks = [m.strip() for m in marks if m.strip()]
        if marks:
            self.link.send(self.name, "queue-ack", bookmarks=",".join(marks), options=options)
        return len(marks)

    def browse(self, filter: str | None = None) -> list[Delivery]:
        """The messages available now (not leased), as the writer sees them.

        Raises:
            CommandException: the writer refused it. TimedOutException: no answer.
        """
        req = self.link.next_id()
        answer = self.link.ask(self.name, "queue-browse", req, req=req, filter=filter)
        if answer.error:
            raise _refusal(self.name, answer.error)
        return answer.items

    def __repr__(self) -> str:
        return f"RemoteQueue({self.name!r}, {json.dumps(self.message_type)})"
