"""The writer's side of queue consumers in read-only processes.

A read-only process consumes a queue by asking the writer (its outbox channel,
:mod:`sowlib.compat.relay`): the writer holds one queue subscription
(:class:`~sowlib.queues.Consumer`) per remote subscription, under the queue's own
rules (fairness, backlogs, lease periods), and writes each lease to the consumer
process's *inbox*, a channel the writer owns (``<pid>-<origin>-<generation>.<writer
id>.in``)
and the consumer follows (:mod:`sowlib.compat.queuelink`). Acknowledgements and
cancels come back through the outbox. When the consumer process goes away (its
channel's lock released: closed or died) its subscriptions end and their leases
return to the queue for the other subscribers, as AMPS returns a disconnected
subscriber's leases.

Requests (the entry's ``sow_key`` is ``<op>\\t<json>``; the entry's topic is the
queue): ``queue-subscribe`` ``{"sub", "filter", "max_backlog"}``, ``queue-ack``
``{"bookmarks", "options"}``, ``queue-unsubscribe`` ``{"sub"}``, ``queue-browse``
``{"req", "filter"}``. Answers in the inbox: ``subscribed`` / ``error`` ``{"sub",
"error"}``, ``delivery`` ``{"sub", "bookmark", "lease_until", "deliveries",
"timestamp"}`` with the message as the entry's data, ``browsed`` ``{"req",
"bookmark", ...}`` per message and ``browse-end`` ``{"req", "error"}``.
Imports ``errors``, ``queues`` and ``journal.outbox``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from sowlib.errors import SowError
from sowlib.journal import Entry
from sowlib.journal.outbox import ChannelReader, ChannelWriter
from sowlib.queues import Consumer, Delivery, Queue

__all__ = ["IN", "QueueService", "inbox_name", "request"]

logger = logging.getLogger(__name__)
#: Channel names of the writer's answers end with this.
IN = ".in"
FindQueue = Callable[[str, str], "Queue | None"]


def inbox_name(channel: str, server: str) -> str:
    """The channel a writer process (id ``server``) answers the outbox ``channel`` in."""
    return f"{channel[: -len('.out')]}.{server}{IN}"


def request(op: str, **fields: Any) -> str:
    """The ``sow_key`` of a request or answer: ``op``, a tab, the fields as JSON."""
    return f"{op}\t{json.dumps(fields)}"


def parse(sow_key: str) -> tuple[str, dict[str, Any]]:
    """``(op, fields)`` of a request (fields ``{}`` for a bare op).

    Raises:
        ValueError: the fields are not a JSON object.
    """
    op, _, text = sow_key.partition("\t")
    fields = json.loads(text) if text else {}
    if not isinstance(fields, dict):
        raise ValueError(f"request fields {text!r} are not an object")
    return op, fields


class _Peer:
    """One read-only process (one outbox channel): its subscriptions and its inbox."""

    def __init__(self, directory: str, channel: str, server: str) -> None:
        self.inbox_name = inbox_name(channel, server)
        self.directory = directory
        self.consumers: dict[str, Consumer] = {}
        self._inbox: ChannelWriter | None = None
        self._lock = threading.Lock()

    def answer(self, queue: str, op: str, data: bytes = b"", /, **fields: Any) -> None:
        with self._lock:
            if self._inbox is None:
                self._inbox = ChannelWriter(self.directory, self.inbox_name)
            if self._inbox.closed:
                return  # the process is gone: its leases were returned
            self._inbox.append(queue, "", data, op=request(op, **fields))

    def deliver(self, sub: str, delivery: Delivery) -> None:
        entry = delivery.entry
        with self._lock:
            if self._inbox is None:
                self._inbox = ChannelWriter(self.directory, self.inbox_name)
            if self._inbox.closed:
                return
            self._inbox.append(
                delivery.queue,
                entry.message_type,
                entry.data,
                op=request(
                    "delivery",
                    sub=sub,
                    bookmark=delivery.bookmark,
                    lease_until=delivery.lease_until,
                    deliveries=delivery.deliveries,
                    timestamp=entry.timestamp,
                ),
                correlation_id=entry.correlation_id,
            )

    def close(self) -> None:
        """End every subscription (leases return) and delete the inbox."""
        with self._lock:
            consumers, self.consumers = list(self.consumers.values()), {}
            inbox, self._inbox = self._inbox, None
            if inbox is not None:
                inbox.close()
        for consumer in consumers:
            with contextlib.suppress(SowError):  # a closed journal: nothing to return to
                consumer.close()
        ChannelReader(self.directory, self.inbox_name).remove()


class QueueService:
    """The remote queue subscriptions of one store's writer; ``find(name, type)``
    gives the writer's queue of that name (None: no such queue)."""

    def __init__(self, directory: str, find: FindQueue, server: str) -> None:
        self.directory = directory
        self.server = server
        self._find = find
        self._peers: dict[str, _Peer] = {}
        self._lock = threading.RLock()

    def handle(self, channel: str, op: str, entry: Entry, fields: dict[str, Any]) -> None:
        """Carry out one queue request of ``channel``'s process.

        Raises:
            SowError: a bad request (after answering the process with the error).
        """
        with self._lock:
            peer = self._peers.get(channel)
            if peer is None:
                peer = self._peers[channel] = _Peer(self.directory, channel, self.server)
        name = entry.topic
        queue = self._find(name, entry.message_type)
        key = "req" if op == "queue-browse" else "sub"
        if queue is None:
            reason = f"queue {name!r}: no such queue in the writer's transaction log"
            logger.warning("outbox %s: %s (a %s request)", channel, reason, op)
            if op in ("queue-subscribe", "queue-browse"):  # the process waits for an answer
                answer = "browse-end" if op == "queue-browse" else "error"
                peer.answer(name, answer, b"", **{key: fields.get(key), "error": reason})
            return
        try:
            self._run(peer, queue, op, fields)
        except SowError as exc:
            logger.error("outbox %s: queue %r: %s", channel, name, exc)
            answer = "browse-end" if op == "queue-browse" else "error"
            peer.answer(name, answer, b"", **{key: fields.get(key), "error": str(exc)})

    def _run(self, peer: _Peer, queue: Queue, op: str, fields: dict[str, Any]) -> None:
        if op == "queue-subscribe":
            sub = str(fields["sub"])
            old = peer.consumers.pop(sub, None)
            if old is not None:
                old.close()
            backlog = fields.get("max_backlog")

            def deliver(delivery: Delivery) -> None:
                peer.deliver(sub, delivery)

            # the consumer registered its handler before asking: deliveries made
            # by the subscribe may come before the answer
            peer.consumers[sub] = queue.subscribe(
                deliver,
                fields.get("filter") or None,
                max_backlog=None if backlog is None else int(backlog),
                name=f"{peer.inbox_name}:{sub}",
            )
            peer.answer(queue.name, "subscribed", sub=sub)
        elif op == "queue-ack":
            queue.ack(str(fields["bookmarks"]), fields.get("options"))
        elif op == "queue-unsubscribe":
            consumer = peer.consumers.pop(str(fields["sub"]), None)
            if consumer is not None:
                consumer.close()
        elif op == "queue-browse":
            req = fields.get("req")
            for d in queue.browse(fields.get("filter") or None):
                e = d.entry
                peer.answer(
                    queue.name,
                    "browsed",
                    e.data,
                    req=req,
                    bookmark=d.bookmark,
                    deliveries=d.deliveries,
                    timestamp=e.timestamp,
                    message_type=e.message_type,
                )
            peer.answer(queue.name, "browse-end", req=req, error=None)
        else:
            logger.error("outbox: unknown queue request %r ignored", op)

    def tick(self) -> None:
        """End due leases of the queues remote subscribers consume (they are checked on
        every call that touches a queue; a remote consumer's process makes none)."""
        with self._lock:
            queues = {
                id(c.queue): c.queue
                for p in self._peers.values()
                for c in p.consumers.values()
                if c.queue is not None
            }
        for queue in queues.values():
            queue.tick()

    def drop(self, channel: str) -> None:
        """``channel``'s process is gone: its subscriptions end, its leases return."""
        with self._lock:
            peer = self._peers.pop(channel, None)
        if peer is not None:
            peer.close()

    def close(self) -> None:
        """End every remote subscription (the writer stops serving)."""
        with self._lock:
            peers, self._peers = list(self._peers.values()), {}
        for peer in peers:
            peer.close()
