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

#: Commands :meth:`Sender.send` runs: those that need no message handler.
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

    @abc.abstractmethod
    def _run(self, command: Command, handler: Handler | None) -> Any:
        """Run ``command`` (the client's command dispatcher)."""

    def allocate_message(self) -> Message:
        """An empty message to fill with setters and :meth:`send`."""
        return Message()

    def send(self, message: Message) -> None:
        """Run ``message`` as a command: ``publish``, ``delta_publish``, ``sow_delete``,
        ``flush`` or ``unsubscribe``.

        The message's ``Expiration`` is a lifetime in seconds (text or a number), as
        the AMPS header is. Results come back as they would from ``execute``; a
        ``sow_delete``'s acknowledgement has no handler here and is dropped.

        Raises:
            UsageException: another command (queries and subscriptions need a
                handler: use ``execute_async(command, handler)``), or a bad expiration.
        """
        name = message.get_command()
        if name not in SENDABLE:
            raise UsageException(
                f"send({name or 'no command'!r}): send runs {', '.join(SENDABLE)};"
                " queries and subscriptions need a handler: use execute_async(command, handler)"
            )
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
        self._run(command, None)
