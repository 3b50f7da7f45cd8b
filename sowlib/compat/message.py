"""The AMPS client's ``Message``: getters by their real names, camelCase aliases, constants.

Imports only ``subscriptions`` (for the event it wraps); never ``store`` or ``topic``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from sowlib.subscriptions import Message as Event

__all__ = ["Handler", "Message", "add_camel_case", "amps_time", "camel_case"]

Handler = Callable[["Message"], object]


def amps_time(epoch: float) -> str:
    """AMPS timestamp text: ``YYYYMMDDTHHMMSS.ffffffZ`` (UTC).

    Example:
        >>> amps_time(0.5)
        '19700101T000000.500000Z'
    """
    whole = int(epoch)
    micros = round((epoch - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f".{micros:06d}Z"


def camel_case(name: str) -> str:
    """``get_sow_key`` -> ``getSowKey`` (the real client's older spelling)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def add_camel_case(cls: type) -> None:
    """Give every public ``snake_case`` method of ``cls`` its camelCase spelling too
    (``set_name`` -> ``setName``), as the real client still registers them."""
    for name in dir(cls):
        if name.startswith("_") or "_" not in name:
            continue
        camel = camel_case(name)
        raw = inspect.getattr_static(cls, name)  # keeps a staticmethod a staticmethod
        if callable(getattr(cls, name)) and not hasattr(cls, camel):
            setattr(cls, camel, raw)


class Message:
    """A message as the AMPS client delivers it: ``get_command()``, ``get_data()`` and friends.

    ``get_expiration()`` is the absolute expiry time (epoch seconds) or None,
    where AMPS shows the lifetime; ``get_bookmark()`` is the transaction-log
    bookmark for bookmark subscriptions and the record's sequence number as
    text otherwise. Every ``get_x_y``/``set_x_y`` method also answers to ``getXY``/``setXY``.

    Example:
        >>> m = Message("publish", "orders", data=b'{"id": 1}', sow_key="42")
        >>> m.get_data(), m.getSowKey(), m.get_command() == Message.Command.Publish
        ('{"id": 1}', '42', True)
    """

    class Command:
        """Values of :meth:`Message.get_command` (and command names for ``Command``)."""

        Ack = "ack"
        DeltaPublish = "delta_publish"
        DeltaSubscribe = "delta_subscribe"
        Flush = "flush"
        GroupBegin = "group_begin"
        GroupEnd = "group_end"
        Heartbeat = "heartbeat"
        Logon = "logon"
        OOF = "oof"
        Publish = "publish"
        SOW = "sow"
        SOWAndDeltaSubscribe = "sow_and_delta_subscribe"
        SOWAndSubscribe = "sow_and_subscribe"
        SOWDelete = "sow_delete"
        StartTimer = "start_timer"
        StopTimer = "stop_timer"
        Subscribe = "subscribe"
        Unsubscribe = "unsubscribe"

    class AckType:
        """Values of :meth:`Message.get_ack_type` (and of ``Command.add_ack_type``)."""

        None_ = ""
        Received = "received"
        Parsed = "parsed"
        Processed = "processed"
        Persisted = "persisted"
        Completed = "completed"
        Stats = "stats"

    class Options:
        """Option strings for ``options=`` and ``Command.set_options`` (comma-join them)."""

        None_ = ""
        OOF = "oof"
        NoEmpties = "no_empties"
        NoSowKey = "no_sowkey"
        SendKeys = "send_keys"
        Replace = "replace"
        Live = "live"
        Timestamp = "timestamp"

        @staticmethod
        def TopN(n: int) -> str:
            """``top_n=N``."""
            return f"top_n={int(n)}"

        @staticmethod
        def SkipN(n: int) -> str:
            """``skip_n=N``."""
            return f"skip_n={int(n)}"

        @staticmethod
        def MaxBacklog(n: int) -> str:
            """``max_backlog=N``: the most unacknowledged messages of a queue subscription."""
            return f"max_backlog={int(n)}"

        @staticmethod
        def Rate(rate: str | int) -> str:
            """``rate=R``: the replay rate of a bookmark subscription (``"2x"``, ``500``)."""
            return f"rate={rate}"

        @staticmethod
        def RateMaxGap(gap: str | int) -> str:
            """``rate_max_gap=G``: how far a rate-limited replay may fall behind."""
            return f"rate_max_gap={gap}"

        @staticmethod
        def Select(fields: str) -> str:
            """``select=[...]`` from ``"-/,+/id"`` or ``"[-/,+/id]"``."""
            text = fields.strip()
            return f"select={text}" if text.startswith("[") else f"select=[{text}]"

    class Status:
        """Values of :meth:`Message.get_status`."""

        Success = "success"
        Failure = "failure"

    class Reason:
        """Values of :meth:`Message.get_reason` (OOF messages)."""

        Deleted = "deleted"
        Expired = "expired"
        Match = "match"

    def __init__(self, command: str = "", topic: str = "", **fields: Any) -> None:
        self._command = command
        self._topic = topic
        self._fields = fields

    @classmethod
    def from_event(cls, event: Event, sub_id: str = "", **extra: Any) -> Message:
        """Wrap a :class:`sowlib.subscriptions.Message`."""
        fields: dict[str, Any] = {
            "data": event.data,
            "sow_key": event.sow_key,
            "bookmark": str(event.seq) if event.seq else "",
            "timestamp": event.timestamp,
            "expiration": event.expiration,
            "correlation_id": event.correlation_id,
            "reason": event.reason,
            "sub_id": sub_id,
            "is_delta": event.is_delta,
        }
        fields.update(extra)
        return cls(event.command, event.topic, **fields)

    @classmethod
    def from_record(cls, record: Any, topic: str, query_id: str = "") -> Message:
        """Wrap a query result record as a ``sow`` message."""
        return cls(
            "sow",
            getattr(record, "topic", None) or topic,
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
        return amps_time(stamp) if stamp else ""

    def get_reason(self) -> str | None:
        """OOF reason (``deleted``, ``expired``, ``match``) or a failure ack's reason."""
        return self._get("reason")  # type: ignore[no-any-return]

    def get_sub_id(self) -> str:
        return str(self._get("sub_id", ""))

    def get_sub_ids(self) -> str:
        """The subscription ids this message matched (one, in process)."""
        return self.get_sub_id()

    def get_command_id(self) -> str:
        return str(self._get("command_id", self._get("sub_id", "") or self._get("query_id", "")))

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

    def get_records_inserted(self) -> int:
        return int(self._get("records_inserted", 0))

    def get_records_updated(self) -> int:
        return int(self._get("records_updated", 0))

    def get_sequence(self) -> int:
        """The sequence number a publish acknowledgement reports."""
        return int(self._get("sequence", 0))

    def get_filter(self) -> str:
        return str(self._get("filter") or "")

    def get_options(self) -> str:
        return str(self._get("options") or "")

    def get_message_type(self) -> str:
        return str(self._get("message_type") or "")

    def get_user_id(self) -> str:
        """Always ``""``: there is no authentication in process."""
        return ""

    def get_client_name(self) -> str:
        return str(self._get("client_name") or "")

    def get_length(self) -> int:
        """Length of the body in bytes."""
        return len(self.get_data_raw())

    def get_sow_deleted(self) -> int:
        """Records removed by the ``sow_delete`` this ack answers (AMPS 5 name)."""
        return self.get_records_deleted()

    def is_delta(self) -> bool:
        """Whether this publish carries only the changed fields (delta subscription)."""
        return bool(self._get("is_delta", False))

    def set_data(self, data: str | bytes) -> Message:
        """Replace the body (handy when building messages in tests)."""
        self._fields["data"] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return self

    def set_topic(self, topic: str) -> Message:
        self._topic = topic
        return self

    def set_command(self, command: str) -> Message:
        self._command = command
        return self

    def set_expiration(self, expiration: float | str | None) -> Message:
        """The lifetime in seconds of a message for :meth:`Client.send` (AMPS header text)."""
        return self._set("expiration", expiration)

    def set_sow_key(self, sow_key: str) -> Message:
        return self._set("sow_key", sow_key)

    def set_sow_keys(self, sow_keys: str) -> Message:
        return self._set("sow_keys", sow_keys)

    def set_correlation_id(self, correlation_id: str | bytes) -> Message:
        value = correlation_id.encode() if isinstance(correlation_id, str) else correlation_id
        return self._set("correlation_id", value)

    def set_filter(self, filter: str) -> Message:
        return self._set("filter", filter)

    def set_options(self, options: str) -> Message:
        return self._set("options", options)

    def set_sub_id(self, sub_id: str) -> Message:
        return self._set("sub_id", sub_id)

    def set_command_id(self, command_id: str) -> Message:
        return self._set("command_id", command_id)

    def set_query_id(self, query_id: str) -> Message:
        return self._set("query_id", query_id)

    def set_bookmark(self, bookmark: str) -> Message:
        return self._set("bookmark", bookmark)

    def set_ack_type(self, ack_type: str) -> Message:
        return self._set("ack_type", ack_type)

    def set_top_n(self, top_n: int) -> Message:
        return self._set("top_n", top_n)

    def set_order_by(self, order_by: str) -> Message:
        return self._set("order_by", order_by)

    def set_batch_size(self, batch_size: int) -> Message:
        return self._set("batch_size", batch_size)

    def get_top_n(self) -> int | None:
        return self._get("top_n")  # type: ignore[no-any-return]

    def get_order_by(self) -> str:
        return str(self._get("order_by") or "")

    def set_bookmark_seq_no(self, seq: int) -> Message:
        """The message's sequence in the client's bookmark store (set when it is logged)."""
        return self._set("bookmark_seq_no", int(seq))

    def get_bookmark_seq_no(self) -> int:
        return int(self._get("bookmark_seq_no", 0) or 0)

    def ack(self, options: str | None = None) -> None:
        """Acknowledge this queue or bookmark-subscription message (as
        ``client.ack(message, options)``); for a queue message ``options`` may be
        ``cancel`` (return it to the queue) or ``expire``.

        A message that came from neither has nothing to acknowledge; the call does
        nothing then.
        """
        acker = self._get("acker")
        if acker is not None:
            acker(self, options=options)

    def get_lease_period(self) -> str:
        """When the lease of a queue message ends (AMPS timestamp text; "" otherwise)."""
        until = self._get("lease_until")
        return "" if until is None else amps_time(until)

    def _set(self, name: str, value: Any) -> Message:
        self._fields[name] = value
        return self

    def fields(self) -> dict[str, Any]:
        """The message's header fields (a copy), by their snake_case names."""
        return {k: v for k, v in self._fields.items() if k != "acker"}

    def copy(self) -> Message:
        """An independent copy (the real client reuses message objects; sowlib does not)."""
        return Message(self._command, self._topic, **dict(self._fields))

    def __repr__(self) -> str:
        return f"Message({self._command!r}, topic={self._topic!r}, sow_key={self.get_sow_key()!r})"


add_camel_case(Message)  # getSowKey, setData, ...: the real client's older spellings
