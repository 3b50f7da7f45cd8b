"""The AMPS client's ``MessageStream``: a query's or subscription's messages, iterated.

Imports only ``compat.message``.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator

from sowlib.compat.message import Message

__all__ = ["MessageStream"]


class MessageStream:
    """Messages of a query or subscription, in arrival order.

    A query's stream ends after its last message. A subscription's stream stays
    open until :meth:`close` (or ``unsubscribe``): iterating blocks for the next
    message, and with :meth:`timeout` it yields ``None`` whenever nothing arrived
    for that many milliseconds, so a loop can do other work (the real client's
    heartbeat idiom). Deliveries happen inside the publishing call: in a
    single-threaded program publish first, then iterate with a timeout.

    :meth:`max_depth` bounds the queue from the start: a publisher on *another*
    thread waits while the stream is full; a publisher on the thread that reads the
    stream (before the first ``next()``: the thread that created it) is never
    blocked (that would deadlock), so the depth may then be exceeded.

    Example:
        >>> stream = MessageStream(live=False)
        >>> stream.put(Message("sow", "t"))
        >>> stream.finish()
        >>> [m.get_command() for m in stream]
        ['sow']
    """

    def __init__(
        self,
        unsubscribe: Callable[[str], object] | None = None,
        sub_id: str = "",
        *,
        live: bool = True,
    ) -> None:
        self._unsubscribe = unsubscribe
        self._sub_id = sub_id
        self._live = live
        self._slots: collections.deque[list[Message]] = collections.deque()
        self._by_key: dict[str, list[Message]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._conflate = False
        self._timeout: float | None = None
        self._max_depth: int | None = None
        # The reading thread: the creator's until another thread iterates, so that
        # max_depth holds publishers on other threads back before the first next().
        self._reader: int | None = threading.get_ident()

    def put(self, message: Message) -> None:
        """Queue ``message`` (called by the client that feeds the stream)."""
        with self._cond:
            if self._closed:
                return
            reader = self._reader
            if (
                self._max_depth is not None
                and reader is not None
                and threading.get_ident() != reader
            ):
                self._cond.wait_for(
                    lambda: self._closed or len(self._slots) < (self._max_depth or 0)
                )
            key = message.get_sow_key()
            if self._conflate and key is not None and message.get_command() == "publish":
                slot = self._by_key.get(key)
                if slot is not None:
                    slot[0] = message
                    return
                self._by_key[key] = slot = [message]
            else:
                slot = [message]
            self._slots.append(slot)
            self._cond.notify_all()

    def timeout(self, millis: int | None) -> MessageStream:
        """Yield ``None`` after ``millis`` ms without a message (None or 0: block)."""
        self._timeout = millis / 1000.0 if millis else None
        return self

    def max_depth(self, depth: int | None) -> MessageStream:
        """Bound the number of queued messages (None: unbounded); see the class notes."""
        self._max_depth = depth if depth and depth > 0 else None
        with self._cond:
            self._cond.notify_all()
        return self

    def get_max_depth(self) -> int:
        """The bound set by :meth:`max_depth` (0: unbounded)."""
        return self._max_depth or 0

    def get_depth(self) -> int:
        """How many messages are queued, not yet read."""
        with self._cond:
            return len(self._slots)

    def conflate(self) -> MessageStream:
        """Replace unprocessed messages that share a SowKey (whole messages, no merge)."""
        self._conflate = True
        return self

    def get_command_id(self) -> str:
        return self._sub_id

    def is_open(self) -> bool:
        """Whether more messages may still arrive or are queued."""
        with self._cond:
            return bool(self._slots) or not self._closed

    def __iter__(self) -> Iterator[Message | None]:
        return self

    def __next__(self) -> Message | None:
        with self._cond:
            self._reader = threading.get_ident()
            if not self._slots and not self._closed:
                if not self._live:
                    raise StopIteration
                arrived = self._cond.wait_for(
                    lambda: bool(self._slots) or self._closed, self._timeout
                )
                if not arrived:
                    return None  # the heartbeat: nothing within the timeout
            if not self._slots:
                raise StopIteration
            slot = self._slots.popleft()
            self._cond.notify_all()
            key = slot[0].get_sow_key()
            if key is not None and self._by_key.get(key) is slot:
                del self._by_key[key]
            return slot[0]

    def close(self) -> None:
        """Unsubscribe (for a subscription); iteration ends once the queue is drained."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None and self._sub_id:
            unsubscribe(self._sub_id)
        self.finish()

    def finish(self) -> None:
        """No more messages will come; iteration ends once the queue is drained."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __enter__(self) -> MessageStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if not self._closed else "closed"
        return f"MessageStream({self._sub_id!r}, {state}, depth={len(self._slots)})"


MessageStream.getDepth = MessageStream.get_depth  # type: ignore[attr-defined]
MessageStream.maxDepth = MessageStream.max_depth  # type: ignore[attr-defined]
