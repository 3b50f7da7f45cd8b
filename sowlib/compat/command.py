"""The AMPS client's ``Command``: a command built with setters, run by ``Client.execute``.

Imports only ``errors`` and ``compat.message``.
"""

from __future__ import annotations

from typing import Any

from sowlib.compat.message import Message
from sowlib.errors import ArgumentError

__all__ = ["COMMANDS", "Command"]

#: Commands :meth:`Client.execute` runs in process.
COMMANDS = (
    "publish",
    "delta_publish",
    "sow",
    "subscribe",
    "delta_subscribe",
    "sow_and_subscribe",
    "sow_and_delta_subscribe",
    "sow_delete",
    "unsubscribe",
    "flush",
)
_ACKS = frozenset(
    v for k, v in vars(Message.AckType).items() if not k.startswith("__") and isinstance(v, str)
)


class Command:
    """A command built with setters (every setter returns the command, for chaining).

    Example:
        >>> Command("sow").set_topic("orders").set_filter("/qty > 5").get_command()
        'sow'

    Raises:
        QueryOptionError: an unknown ack type.
    """

    def __init__(self, command: str) -> None:
        self._command = str(command).lower()
        self.fields: dict[str, Any] = {}
        self._acks: list[str] = []

    def _set(self, name: str, value: Any) -> Command:
        self.fields[name] = value
        return self

    def reset(self, command: str) -> Command:
        """Start over as a new ``command`` (the real client reuses Command objects)."""
        self._command = str(command).lower()
        self.fields.clear()
        self._acks.clear()
        return self

    def get_command(self) -> str:
        return self._command

    def set_topic(self, topic: str) -> Command:
        return self._set("topic", topic)

    def set_filter(self, filter: str) -> Command:
        return self._set("filter", filter)

    def set_order_by(self, order_by: str) -> Command:
        return self._set("order_by", order_by)

    def set_top_n(self, top_n: int) -> Command:
        return self._set("top_n", top_n)

    def set_skip_n(self, skip_n: int) -> Command:
        return self._set("skip_n", skip_n)

    def set_batch_size(self, batch_size: int) -> Command:
        """Accepted; in process every record is delivered as its own message."""
        return self._set("batch_size", batch_size)

    def set_options(self, options: str) -> Command:
        return self._set("options", options)

    def set_sow_key(self, sow_key: str) -> Command:
        """The key of a publish to a topic with publisher-supplied keys."""
        return self._set("sow_key", sow_key)

    def set_sow_keys(self, sow_keys: str) -> Command:
        """Restrict a sow, sow_and_subscribe or sow_delete to these comma-separated keys."""
        return self._set("sow_keys", sow_keys)

    def set_bookmark(self, bookmark: str) -> Command:
        """A subscribe with a bookmark replays the transaction log; a sow is historical."""
        return self._set("bookmark", bookmark)

    def set_data(self, data: str | bytes) -> Command:
        return self._set("data", data)

    def set_expiration(self, expiration: float) -> Command:
        return self._set("expiration", expiration)

    def set_correlation_id(self, correlation_id: str | bytes) -> Command:
        return self._set("correlation_id", correlation_id)

    def set_sub_id(self, sub_id: str) -> Command:
        return self._set("sub_id", sub_id)

    def get_sub_id(self) -> str:
        return str(self.fields.get("sub_id") or "")

    def set_command_id(self, command_id: str) -> Command:
        """The id acknowledgements and query messages carry (``get_command_id``)."""
        return self._set("command_id", command_id)

    def get_command_id(self) -> str:
        return str(self.fields.get("command_id") or "")

    def set_query_id(self, query_id: str) -> Command:
        return self._set("query_id", query_id)

    def get_query_id(self) -> str:
        return str(self.fields.get("query_id") or "")

    def set_sequence(self, sequence: int) -> Command:
        """Accepted; the store assigns sequence numbers (the ack reports the real one)."""
        return self._set("sequence", int(sequence))

    def get_sequence(self) -> int:
        return int(self.fields.get("sequence") or 0)

    def set_timeout(self, timeout: int) -> Command:
        """Accepted; nothing waits in process."""
        return self._set("timeout", timeout)

    def set_ack_type(self, ack_type: str) -> Command:
        """Request exactly these acks (comma-separated: processed, completed, stats, ...)."""
        self._acks = []
        return self.add_ack_type(ack_type)

    def add_ack_type(self, ack_type: str) -> Command:
        """Request one more ack type (comma-separated names are split)."""
        for name in str(ack_type).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in _ACKS:
                raise ArgumentError("ack_type", name, f"expected one of {sorted(_ACKS)}")
            if name not in self._acks:
                self._acks.append(name)
        return self

    def get_ack_type(self) -> str:
        """The requested ack types, comma-separated."""
        return ",".join(self._acks)

    def acks(self) -> tuple[str, ...]:
        """The requested ack types."""
        return tuple(self._acks)

    def __repr__(self) -> str:
        return f"Command({self._command!r}, {self.fields!r})"
