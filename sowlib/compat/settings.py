"""Client settings that have no effect in process: accepted and documented, or refused.

A base class of :class:`sowlib.compat.client.Client`. Each setter either records
the value (so the matching getter answers), does nothing for a documented
reason, or raises :class:`UsageException` where ignoring it could mislead.
Imports only ``compat.exceptions``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from sowlib.compat.exceptions import UsageException

__all__ = ["Settings"]


class Settings:
    """Connection, acknowledgement and store settings of the AMPS client."""

    name: str

    def __init__(self) -> None:
        self._handlers: dict[str, Any] = {}
        self.default_max_depth: int | None = None
        self._auto_ack = False
        self._ack_batch_size = 0
        self._ack_timeout = 0
        self._error_on_gap = False
        self._logon_data = ""

    def get_name_hash(self) -> str:
        """A stable hash of the client name (the real client uses it in bookmarks)."""
        return str(zlib.crc32(self.name.encode("utf-8")))

    @staticmethod
    def convert_version_to_number(version: str) -> int:
        """``"5.3.1.0"`` -> ``5030100`` (two digits per part after the first)."""
        parts = [int(p) if p.isdigit() else 0 for p in str(version).split(".")[:4]]
        parts += [0] * (4 - len(parts))
        return (
            parts[0] * 1_000_000
            + min(parts[1], 99) * 10_000
            + min(parts[2], 99) * 100
            + min(parts[3], 99)
        )

    # ------------------------------------------------------------------ accepted no-ops

    def set_heartbeat(self, interval: int, timeout: int | None = None) -> None:
        """No-op: there is no connection to keep alive."""

    def set_disconnect_handler(self, handler: Callable[..., object]) -> None:
        """No-op: an in-process client is never disconnected behind its back."""
        self._handlers["disconnect"] = handler

    def add_connection_state_listener(self, listener: Callable[..., object]) -> None:
        """No-op: the connection state never changes on its own."""
        self._handlers.setdefault("state", []).append(listener)

    def remove_connection_state_listener(self, listener: Callable[..., object]) -> None:
        listeners = self._handlers.get("state", [])
        if listener in listeners:
            listeners.remove(listener)

    def set_exception_listener(self, listener: Callable[[BaseException], object]) -> None:
        """Called with the exception when a message handler raises."""
        self._handlers["exception"] = listener

    def get_exception_listener(self) -> Callable[[BaseException], object] | None:
        return self._handlers.get("exception")

    def set_duplicate_message_handler(self, handler: Callable[..., object]) -> None:
        """No-op: a journal replay never delivers a message twice."""

    def set_failed_write_handler(self, handler: Callable[..., object]) -> None:
        """No-op: a failed publish raises from ``publish`` instead."""

    def set_last_chance_message_handler(self, handler: Callable[..., object]) -> None:
        """No-op: every message has its subscription's handler or stream."""

    set_unhandled_message_handler = set_last_chance_message_handler

    def set_retry_on_disconnect(self, retry: bool) -> None:
        """No-op: nothing disconnects."""

    def set_publish_store(self, store: object) -> None:
        """No-op: publishes are applied before ``publish`` returns; nothing to replay."""

    def set_bookmark_store(self, store: object) -> None:
        """Refused: bookmarks are not persisted by the client in process.

        Raises:
            UsageException: always; keep the last bookmark in a SOW topic (see
                ``examples/resume_from_bookmark.py``) and pass it to bookmark_subscribe.
        """
        raise UsageException(
            "set_bookmark_store: the in-process client keeps bookmarks in memory only;"
            " store Message.get_bookmark() in a SOW topic and resume with it"
        )

    def start_timer(self) -> None:
        """Refused: timers are a server feature with no in-process meaning."""
        raise UsageException("start_timer has no in-process meaning")

    stop_timer = start_timer

    def set_default_max_depth(self, depth: int) -> None:
        """The :meth:`MessageStream.max_depth` of streams created from now on."""
        self.default_max_depth = depth

    def get_default_max_depth(self) -> int:
        return self.default_max_depth or 0

    def set_auto_ack(self, enabled: bool) -> None:
        """Recorded; bookmark acks only update the in-memory MOST_RECENT position."""
        self._auto_ack = bool(enabled)

    def get_auto_ack(self) -> bool:
        return self._auto_ack

    def set_ack_batch_size(self, size: int) -> None:
        """Recorded; acks are applied at once in process."""
        self._ack_batch_size = int(size)

    def get_ack_batch_size(self) -> int:
        return self._ack_batch_size

    def set_ack_timeout(self, millis: int) -> None:
        """Recorded; acks are applied at once in process."""
        self._ack_timeout = int(millis)

    def get_ack_timeout(self) -> int:
        return self._ack_timeout

    def set_error_on_publish_gap(self, enabled: bool) -> None:
        """Recorded; there is no publish store, so there are no gaps."""
        self._error_on_gap = bool(enabled)

    def get_error_on_publish_gap(self) -> bool:
        return self._error_on_gap

    def get_unpersisted_count(self) -> int:
        """Always 0: a publish is in the store when ``publish`` returns."""
        return 0

    def set_logon_correlation_data(self, data: str) -> None:
        self._logon_data = str(data)

    def get_logon_correlation_data(self) -> str:
        return self._logon_data

    def set_thread_created_callback(self, callback: Callable[..., object]) -> None:
        """No-op: the in-process client starts no threads."""

    def set_global_command_type_message_handler(
        self, command: str, handler: Callable[..., object]
    ) -> None:
        """No-op: there are no heartbeats or unsolicited acks to route."""

    def set_transport_filter(self, callback: Callable[..., object]) -> None:
        """Refused: there are no bytes on a wire to filter.

        Raises:
            UsageException: always.
        """
        raise UsageException("set_transport_filter: there is no transport in process")
