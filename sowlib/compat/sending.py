"""``Client.allocate_message`` and ``Client.send``: a command built as a bare message.

A base class of :class:`sowlib.compat.client.Client`, for programs in the shape of
the official samples that fill a message with setters and send it. Imports
``compat.command``, ``compat.exceptions`` and ``compat.message``.
"""

from __future__ import annotations

import abc
from typing import Any

from sowlib.compat.command import Command
from sowlib.compat.exceptions import UsageException
from sowlib.compat.message import Handler, Message

__all__ = ["Sender"]

#: Commands :meth:`Sender.send` runs without a routed message handler.
SENDABLE = ("publish", "delta_publish", "sow_delete", "flush", "unsubscribe")
_FIELDS = (
    "data",
    "expiration",
    "sow_key",
    "sow_keys",
    "correlation_id",
    "filter",
    "options",
    "sub_id",
    "command_id",
    "query_id",
    "bookmark",
    "top_n",
    "order_by",
)


def _lifetime(value: Any) -> float | None:
    """The ``Expiration`` header (seconds, as text or a number) as a number."""
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UsageException(f"expiration {value!r} is not a number of seconds") from None


class Sender(abc.ABC):
    """Raw-message sending of one client."""

    def __init__(self) -> None:
        self._message_routes: dict[str, Handler] = {}

    @abc.abstractmethod
    def _run(self, command: Command, handler: Handler | None) -> Any:
        """Run ``command`` (the client's command dispatcher)."""

    def allocate_message(self) -> Message:
        """An empty message to fill with setters and :meth:`send`."""
        return Message()

    def add_message_handler(
        self,
        command_id: str,
        message_handler: Handler,
        acks: str | int = "",
        is_subscribe: bool = False,
    ) -> None:
        """Route the messages of the command :meth:`send` sends with ``command_id`` to
        ``message_handler`` (the way to send queries and subscriptions)."""
        self._message_routes[str(command_id)] = message_handler

    def remove_message_handler(self, command_id: str) -> bool:
        """Forget the route for ``command_id``; returns whether there was one."""
        return self._message_routes.pop(str(command_id), None) is not None

    def send(self, message: Message) -> None:
        """Run ``message`` as a command.

        ``publish``, ``delta_publish``, ``sow_delete``, ``flush`` and ``unsubscribe``
        need nothing more; a query or subscription (``sow``, ``subscribe``,
        ``sow_and_subscribe``, the delta forms) needs a handler routed to its
        command id first (:meth:`add_message_handler`), and its messages go there.
        The message's ``Expiration`` is a lifetime in seconds (text or a number), as
        the AMPS header is. A ``sow_delete``'s acknowledgement goes to the route
        of its command id, if there is one.

        Raises:
            UsageException: a query or subscription without a routed handler, an
                unknown command, or a bad expiration.
        """
        name = message.get_command()
        command = Command(name)
        fields = message.fields()
        for field in _FIELDS:
            value = fields.get(field)
            if value is not None and value != "":
                command.fields[field] = value
        if message.get_topic():
            command.set_topic(message.get_topic())
        if "expiration" in command.fields:
            command.fields["expiration"] = _lifetime(command.fields["expiration"])
        route = (
            self._message_routes.get(command.get_command_id()) if command.get_command_id() else None
        )
        if name not in SENDABLE and route is None:
            raise UsageException(
                f"send({name or 'no command'!r}) needs a handler: set_command_id on the"
                " message and add_message_handler(command_id, handler) first"
                " (or use execute_async(command, handler))"
            )
        got = self._run(command, route)
        if route is not None and isinstance(got, Message):
            route(got)
