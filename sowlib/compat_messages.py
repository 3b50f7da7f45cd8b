"""AMPS-client-shaped messages and streams for :mod:`sowlib.compat`, and its argument binding.

Imports only ``errors`` and ``subscriptions``; never ``store`` or ``topic``.
"""

from __future__ import annotations

import collections
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from sowlib.errors import QueryOptionError
from sowlib.subscriptions import Message as Event

__all__ = ["Handler", "Message", "MessageStream", "bind_arguments", "parse_options"]

Handler = Callable[["Message"], object]


def _amps_time(epoch: float) -> str:
    """AMPS timestamp text: ``YYYYMMDDTHHMMSS.ffffffZ`` (UTC)."""
    whole = int(epoch)
    micros = round((epoch - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f".{micros:06d}Z"


class Message:
    """A message as the AMPS client delivers it: ``get_command()``, ``get_data()`` and friends.

    ``get_expiration()`` is the absolute expiry time (epoch seconds) or None,
    where AMPS shows the lifetime; ``get_bookmark()`` is the sequence number as text.
    """

    class Command:
        """Values of :meth:`Message.get_command`."""

        SOW = "sow"
        Publish = "publish"
        OOF = "oof"
        GroupBegin = "group_begin"
        GroupEnd = "group_end"
        Ack = "ack"

    class AckType:
        """Values of :meth:`Message.get_ack_type`."""

        Processed = "processed"
        Completed = "completed"
        Stats = "stats"

    def __init__(self, command: str, topic: str = "", **fields: Any) -> None:
        self._command = command
        self._topic = topic
        self._fields = fields

    @classmethod
    def from_event(cls, event: Event, sub_id: str = "") -> Message:
        """Wrap a :class:`sowlib.subscriptions.Message`."""
        return cls(
            event.command,
            event.topic,
            data=event.data,
            sow_key=event.sow_key,
            bookmark=str(event.seq) if event.seq else "",
            timestamp=event.timestamp,
            expiration=event.expiration,
            correlation_id=event.correlation_id,
            reason=event.reason,
            sub_id=sub_id,
            is_delta=event.is_delta,
        )

    @classmethod
    def from_record(cls, record: Any, topic: str, query_id: str = "") -> Message:
        """Wrap a query result record as a ``sow`` message."""
        return cls(
            "sow",
            topic,
            data=record.data,
            sow_key=record.sow_key,
            bookmark=str(record.seq),
            timestamp=record.timestamp,
            expiration=record.expiration,
            correlation_id=getattr(record, "correlation_id", b"") or b"",
            query_id=query_id,
        )

    def _get(self, name: str, default: Any = None) -> Any:
        return self._fields.get(name, default)

    def get_command(self) -> str:
        """One of the :class:`Message.Command` values."""
        return self._command

    def get_topic(self) -> str:
        return self._topic

    def get_data(self) -> str:
        """The body as text (UTF-8; undecodable bytes replaced)."""
        return bytes(self._get("data", b"")).decode("utf-8", "replace")

    def get_data_raw(self) -> bytes:
        """The body as bytes."""
        return bytes(self._get("data", b""))

    def get_sow_key(self) -> str | None:
        return self._get("sow_key")  # type: ignore[no-any-return]

    def get_sow_keys(self) -> str | None:
        """The comma-separated keys of an acknowledgement, else this message's key."""
        return self._get("sow_keys", self.get_sow_key())  # type: ignore[no-any-return]

    def get_expiration(self) -> float | None:
        return self._get("expiration")  # type: ignore[no-any-return]

    def get_correlation_id(self) -> str:
        return bytes(self._get("correlation_id", b"") or b"").decode("utf-8", "replace")

    def get_bookmark(self) -> str:
        return str(self._get("bookmark", ""))

    def get_timestamp(self) -> str:
        """AMPS timestamp text (``YYYYMMDDTHHMMSS.ffffffZ``), or ``""``."""
        stamp = self._get("timestamp")
        return _amps_time(stamp) if stamp else ""

    def get_reason(self) -> str | None:
        """OOF reason: ``deleted``, ``expired`` or ``match``."""
        return self._get("reason")  # type: ignore[no-any-return]

    def get_sub_id(self) -> str:
        return str(self._get("sub_id", ""))

    def get_query_id(self) -> str:
        return str(self._get("query_id", ""))

    def get_batch_size(self) -> int:
        return int(self._get("batch_size", 1))

    def get_ack_type(self) -> str | None:
        return self._get("ack_type")  # type: ignore[no-any-return]

    def get_status(self) -> str | None:
        return self._get("status")  # type: ignore[no-any-return]

    def get_matches(self) -> int:
        return int(self._get("matches", 0))

    def get_topic_matches(self) -> int:
        return int(self._get("topic_matches", 0))

    def get_records_deleted(self) -> int:
        return int(self._get("records_deleted", 0))

    def get_records_returned(self) -> int:
        return int(self._get("records_returned", 0))

    def get_sequence(self) -> int:
        """The sequence number a publish acknowledgement reports."""
        return int(self._get("sequence", 0))

    def is_delta(self) -> bool:
        """Whether this publish carries only the changed fields (delta subscription)."""
        return bool(self._get("is_delta", False))

    def __repr__(self) -> str:
        return f"Message({self._command!r}, topic={self._topic!r}, sow_key={self.get_sow_key()!r})"


class MessageStream:
    """Messages of a query or subscription, iterated in arrival order.

    In process, iteration does not block forever: it waits ``timeout`` milliseconds
    (default 0) for the next message and then stops; ``timeout(None)`` waits until
    :meth:`close`. :meth:`conflate` keeps only the newest queued message per SowKey.
    """

    def __init__(
        self, unsubscribe: Callable[[str], object] | None = None, sub_id: str = ""
    ) -> None:
        self._unsubscribe = unsubscribe
        self._sub_id = sub_id
        self._slots: collections.deque[list[Message]] = collections.deque()
        self._by_key: dict[str, list[Message]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._conflate = False
        self._timeout: float | None = 0.0

    def _put(self, message: Message) -> None:
        with self._cond:
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
        """Wait at most ``millis`` ms for a message while iterating (None: until closed)."""
        self._timeout = None if millis is None else millis / 1000.0
        return self

    def conflate(self) -> MessageStream:
        """Replace unprocessed messages that share a SowKey (whole messages, no merge)."""
        self._conflate = True
        return self

    def get_command_id(self) -> str:
        return self._sub_id

    def __iter__(self) -> Iterator[Message]:
        return self

    def __next__(self) -> Message:
        with self._cond:
            if not self._slots and not self._closed:
                self._cond.wait_for(lambda: bool(self._slots) or self._closed, self._timeout)
            if not self._slots:
                raise StopIteration
            slot = self._slots.popleft()
            key = slot[0].get_sow_key()
            if key is not None and self._by_key.get(key) is slot:
                del self._by_key[key]
            return slot[0]

    def close(self) -> None:
        """Unsubscribe (for a subscription) and end iteration once the queue is drained."""
        if self._unsubscribe is not None and self._sub_id:
            self._unsubscribe(self._sub_id)
        self._end()

    def _end(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __enter__(self) -> MessageStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _split_options(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]


def parse_options(options: str | int | None) -> dict[str, Any]:
    """Parse an AMPS ``options`` string such as ``"oof,no_empties,skip_n=5,select=[+/a]"``.

    Returns a dict with ``oof``/``no_empties``/``no_sowkey``/``send_keys`` flags
    (True when present), ``skip_n``/``top_n`` ints and ``select`` (the bracketed list text).

    Raises:
        QueryOptionError: an unknown option or a bad value.
    """
    if options is None or options == 0 or options == "":
        return {}
    if not isinstance(options, str):
        raise QueryOptionError("options", options, "expected an AMPS options string")
    out: dict[str, Any] = {}
    for part in _split_options(options):
        name, eq, value = (s.strip() for s in part.partition("="))
        if name in ("oof", "no_empties", "no_sowkey", "send_keys") and not eq:
            out[name] = True
        elif name in ("skip_n", "top_n") and eq:
            if not value.isdigit():
                raise QueryOptionError(name, value, "expected a non-negative integer")
            out[name] = int(value)
        elif name == "select" and value.startswith("[") and value.endswith("]"):
            out[name] = value
        else:
            raise QueryOptionError("options", part, "unknown or malformed option")
    return out


def _signature(*required: str, **defaults: Any) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind) for n in required]
    params += [inspect.Parameter(n, kind, default=v) for n, v in defaults.items()]
    return inspect.Signature(params)


SOW = _signature(
    "topic",
    filter=None,
    batch_size=10,
    timeout=0,
    top_n=None,
    order_by=None,
    bookmark=None,
    options=0,
)
SUBSCRIBE = _signature(
    "topic", filter=None, options=None, timeout=0, sub_id=None, bookmark=None, oof_enabled=False
)
SOW_AND_SUBSCRIBE = _signature(
    "topic",
    filter=None,
    batch_size=1,
    oof_enabled=False,
    timeout=0,
    top_n=None,
    order_by=None,
    bookmark=None,
    options=None,
)
SOW_DELETE = _signature("topic", filter=None, timeout=0)
BY_KEYS = _signature("topic", keys="", timeout=0)
BY_DATA = _signature("topic", data="", timeout=0)


def bind_arguments(
    sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Handler | None, dict[str, Any]]:
    """Split the optional leading message handler off, then bind like Python would."""
    handler = kwargs.pop("on_message", None)
    if handler is None and args and callable(args[0]):
        handler, args = args[0], args[1:]
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return handler, dict(bound.arguments)
