"""Client settings that have no effect in process: accepted and documented, or refused.

A base class of :class:`sowlib.compat.client.Client`. Each setter either records
the value (so the matching getter answers), does nothing for a documented
reason, or raises :class:`UsageException` where ignoring it could mislead.
Imports only ``compat.exceptions`` and ``compat.stores``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from sowlib.compat.exceptions import UsageException
from sowlib.compat.stores import BookmarkStore, PublishStore

__all__ = ["Settings"]


def _checked(store: Any, call: str, needs: tuple[str, ...]) -> Any:
    """``store`` when it is None or has the methods ``needs``; else UsageException."""
    missing = [n for n in needs if store is not None and not callable(getattr(store, n, None))]
    if missing:
        raise UsageException(
            f"{call}: {type(store).__name__} is not a store (it has no {', '.join(missing)})"
        )
    return store


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
        """Recorded; a journal replay never delivers a message twice, so it is never called."""
        self._handlers["duplicate"] = handler

    def set_failed_write_handler(self, handler: Callable[..., object]) -> None:
        """No-op: a failed publish raises from ``publish`` instead."""

    def set_last_chance_message_handler(self, handler: Callable[..., object]) -> None:
        """No-op: every message has its subscription's handler or stream."""

    set_unhandled_message_handler = set_last_chance_message_handler

    def set_retry_on_disconnect(self, retry: bool) -> None:
        """Recorded; nothing disconnects."""
        self._handlers["retry"] = bool(retry)

    def set_publish_store(self, store: PublishStore | None) -> None:
        """Every later publish goes through ``store`` (it counts them; nothing is held).

        Raises:
            UsageException: ``store`` is not a publish store (no ``store`` method).
        """
        self._handlers["publish_store"] = _checked(store, "set_publish_store", ("store",))

    def get_publish_store(self) -> PublishStore | None:
        return self._handlers.get("publish_store")

    def set_bookmark_store(self, store: BookmarkStore | None) -> None:
        """Bookmark subscriptions log their messages in ``store`` and ``MOST_RECENT``
        resumes from it (see :mod:`sowlib.compat.stores`).

        Raises:
            UsageException: ``store`` lacks ``log``, ``discard_message`` or ``get_most_recent``.
        """
        needs = ("log", "discard_message", "get_most_recent")
        self._handlers["bookmark_store"] = _checked(store, "set_bookmark_store", needs)

    def get_bookmark_store(self) -> BookmarkStore | None:
        return self._handlers.get("bookmark_store")

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
        """Bookmark-subscription messages a handler returned from are acknowledged."""
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
        """No-op: there are no bytes on a wire to show it; results do not change."""
        self._handlers["transport_filter"] = callback

    def get_duplicate_message_handler(self) -> Callable[..., object] | None:
        return self._handlers.get("duplicate")

    def get_retry_on_disconnect(self) -> bool:
        return bool(self._handlers.get("retry", False))
