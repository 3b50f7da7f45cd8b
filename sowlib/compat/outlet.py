"""A read-only process's side of the outbox: asking the writer to publish.

[R] A pub/sub publish (a topic without a SOW) made in a process that opened the
store read-only reaches every subscriber of the topic, in any process, as in AMPS:
the process delivers it to its own subscribers at once and appends it to its own
channel under ``<store>/.outbox`` (:mod:`sowlib.journal.outbox`); the writer's
process publishes it from there (:mod:`sowlib.compat.relay`) to its subscribers and
to the other read-only processes, and this process skips the copy that comes back.
To a topic the transaction log records, the publish is not delivered here first:
the writer journals it and every process's subscribers (this one's included)
receive it from the journal, with its bookmark.

[R] With no writer process serving the store (none has it open with a hub, see
:func:`sowlib.compat.attach`, or it died), the publish raises
:class:`~sowlib.compat.exceptions.DisconnectedException`, as an AMPS client's
publish does when its server is down; nothing is queued for a writer that may
never come. Imports ``errors``, ``journal.outbox``, ``compat.relay`` and
``compat.exceptions``.
"""

from __future__ import annotations

import os
import threading

from sowlib.compat.exceptions import DisconnectedException, PublishException
from sowlib.compat.relay import OUT, error_path, server_path
from sowlib.journal.outbox import ChannelWriter, lock_held, outbox_directory

__all__ = ["Outlet"]


class Outlet:
    """The requests one read-only hub sends to the writer of the store in ``store_path``.

    ``origin`` names the hub in its channel and in the bus entries the writer makes of
    its publishes (``<pid>-<origin>-<generation>.out``; a new generation after damage).
    """

    def __init__(self, store_path: str, origin: str) -> None:
        self.store_path = store_path
        self.origin = origin
        self.sent = 0
        self._lock = threading.Lock()
        self._channel: ChannelWriter | None = None
        self._pid = -1
        self._generation = 0
        self._closed = False

    @property
    def channel_name(self) -> str:
        """This process's channel now (the writer answers in the same name with ``.in``)."""
        return f"{os.getpid()}-{self.origin}-{self._generation}{OUT}"

    def serving(self) -> bool:
        """Whether a writer process serves the store now."""
        return lock_held(server_path(self.store_path))

    def publish(
        self,
        topic: str,
        message_type: str,
        data: bytes,
        correlation_id: bytes = b"",
        expiration: float | None = None,
    ) -> None:
        """Ask the writer to publish; returns once the request is written (the writer
        carries it out within milliseconds). Raises as :meth:`send`."""
        self.send(topic, message_type, data, "publish", correlation_id, expiration)

    def send(
        self,
        topic: str,
        message_type: str,
        data: bytes,
        op: str,
        correlation_id: bytes = b"",
        expiration: float | None = None,
    ) -> None:
        """Append the request ``op`` (see :mod:`sowlib.compat.queueserve` for the queue
        requests) to this process's channel.

        Raises:
            DisconnectedException: no writer process serves the store, or this outlet
                is closed.
            PublishException: the writer found this process's earlier requests
                damaged (those from the damage on were not carried out; the files are
                kept as ``*.damaged`` in the outbox); this request was not sent either,
                the next one is, in a new channel.
            StorePathError: the outbox cannot be written (no permission, a full disk).
        """
        with self._lock:
            if self._closed:
                raise DisconnectedException(f"{op.split()[0]} {topic!r}: the client is closed")
            if not self.serving():
                raise DisconnectedException(
                    f"{op.split()[0]} {topic!r}: no writer process serves the store"
                    f" {self.store_path} (a read-only process publishes through the writer;"
                    " open the store as its writer and attach it in some process)"
                )
            channel = self._channel_now()
            channel.append(
                topic,
                message_type,
                data,
                op=op,
                correlation_id=correlation_id,
                expiration=expiration,
            )
            self.sent += 1

    def _channel_now(self) -> ChannelWriter:
        name = self.channel_name
        failed = error_path(self.store_path, name)
        if os.path.exists(failed):
            with open(failed, encoding="utf-8", errors="replace") as fh:
                reason = fh.read().strip()
            os.unlink(failed)
            if self._channel is not None:
                self._channel.close()
            self._channel = None
            self._generation += 1  # a fresh channel for the next request
            raise PublishException(
                f"the writer could not read this process's earlier requests ({reason});"
                f" those after the damage were not published; kept in {name}.*.damaged"
            )
        if self._channel is None or self._pid != os.getpid():
            self._channel = ChannelWriter(outbox_directory(self.store_path), name)
            self._pid = os.getpid()
        return self._channel

    def close(self) -> None:
        """Close the channel (the writer deletes it once read); idempotent."""
        with self._lock:
            self._closed = True
            if self._channel is not None:
                self._channel.close()
