"""The writer's side of the outbox: carrying out what read-only processes ask.

A read-only process of a store cannot write it, so a pub/sub publish made there is
appended to the process's own channel under ``<store>/.outbox``
(:mod:`sowlib.journal.outbox`, :mod:`sowlib.compat.outlet`). The writer's process
runs one :class:`OutboxServer` per store (while a :class:`~sowlib.compat.hub.Hub`
of the store is open there): on the process's follower thread it reads every
channel as it grows and publishes each request exactly as a publish made in the
writer would be (its subscribers, the journal or the pub/sub bus, so every
read-only follower receives it once; the sender skips the bus copy of its own).

While it serves, the server holds a lock on ``<store>/.outbox/SERVER``; a
read-only process that finds the lock free knows no writer serves the store
(:data:`SERVER_NAME`). A channel whose owner is gone (its lock released: closed or
dead) is read to its end, then deleted. [R] A request made before this server
started was made of an earlier writer process (which carried it out, or died
first) and is not carried out again: a publish is not repeated after a writer
restart, and queue subscriptions of other processes end with the writer that held
them (their messages stay in the queue). A damaged channel is never guessed at: its
files are renamed ``*.damaged`` (kept for inspection), the error is logged and
written to ``<channel>.error``, where the owner's next request finds it.
Imports ``errors``, ``journal`` and ``topic.follow``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from sowlib.compat.queueserve import IN, FindQueue, QueueService, parse
from sowlib.errors import SowError, StoreClosedError
from sowlib.journal import Entry
from sowlib.journal.outbox import ChannelReader, channel_names, outbox_directory
from sowlib.topic.follow import FOLLOWER

__all__ = [
    "OUT",
    "SERVER_NAME",
    "OutboxServer",
    "error_path",
    "serve_outbox",
    "server_id",
    "server_path",
]

logger = logging.getLogger(__name__)
#: The lock file a serving writer holds, in the outbox directory.
SERVER_NAME = "SERVER"
#: Channel names of read-only processes' requests end with this.
OUT = ".out"
#: Seconds between two looks at whether the channels' owners still live.
CHECK_EVERY = 0.5
Publish = Callable[[Entry, str], object]

_servers: weakref.WeakKeyDictionary[Any, OutboxServer] = weakref.WeakKeyDictionary()
_servers_lock = threading.Lock()


def server_path(store_path: str) -> str:
    """The lock file a writer serving the store in ``store_path`` holds."""
    return os.path.join(outbox_directory(store_path), SERVER_NAME)


def server_id(store_path: str) -> str:
    """The id of the writer process serving the store now ("" when none ever did);
    its answers to a read-only process are in ``<channel>.<id>.in``. Read it after
    seeing the server's lock held: a server writes its id before it locks."""
    try:
        with open(server_path(store_path) + ".id", encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except FileNotFoundError:
        return ""


def error_path(store_path: str, channel: str) -> str:
    """Where the server leaves the error that stopped it reading ``channel``."""
    return os.path.join(outbox_directory(store_path), f"{channel}.error")


def serve_outbox(store: Any, publish: Publish, find_queue: FindQueue) -> OutboxServer:
    """The server of ``store`` (a writer with a directory), started on first use; each
    caller's ``publish(entry, origin)`` is added to its targets (see
    :meth:`OutboxServer.add`); ``find_queue(name, type)`` gives the store's queues
    (the first caller's is used).

    Raises:
        OSError: the outbox directory cannot be created.
        StoreClosedError: ``store`` is closed.
    """
    with _servers_lock:
        server = _servers.get(store)
        if server is None or server.closed:
            if store.closed:
                raise StoreClosedError(f"store {store.path}")
            server = OutboxServer(store.path, lambda: not store.closed, find_queue)
            _servers[store] = server
            weakref.finalize(store, server.close)
        server.add(publish)
        return server


class OutboxServer:
    """Reads the read-only processes' channels of the store in ``store_path`` and hands
    each publish to its targets (the hubs of the store in this process).

    Raises:
        OSError: the outbox directory cannot be created.
    """

    def __init__(self, store_path: str, alive: Callable[[], bool], find_queue: FindQueue) -> None:
        self.store_path = store_path
        self.directory = outbox_directory(store_path)
        self.id = secrets.token_hex(6)
        self.queues = QueueService(self.directory, find_queue, self.id)
        self.requests = 0  # requests carried out (for tests and benchmarks)
        self.stale = 0  # requests made before this server started, not carried out
        self.started = time.time()
        self.failures = 0  # channels found damaged
        self._alive = alive
        self._lock = threading.RLock()
        self._targets: tuple[Publish, ...] = ()
        self._readers: dict[str, ChannelReader] = {}
        self._check_at = 0.0
        self.closed = False
        os.makedirs(self.directory, exist_ok=True)
        for name in channel_names(self.directory):
            if name.endswith(IN):  # answers of an earlier writer process: nobody reads on
                ChannelReader(self.directory, name).remove()
        id_path = server_path(store_path) + ".id"
        with open(id_path + ".new", "w", encoding="ascii") as fh:
            fh.write(f"{self.id}\n")
        os.replace(id_path + ".new", id_path)  # before the lock: see server_id
        fd = os.open(server_path(store_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)  # only a reader's probe holds it, for microseconds
        self._fd = fd
        FOLLOWER.follow(self, self.poll, self.directory)

    def add(self, publish: Publish) -> None:
        """Hand the requests to ``publish`` too (a hub of the store)."""
        with self._lock:
            if publish not in self._targets:
                self._targets = (*self._targets, publish)

    def discard(self, publish: Publish) -> None:
        """Stop handing requests to ``publish``; the server stops with its last target."""
        with self._lock:
            self._targets = tuple(t for t in self._targets if t != publish)
            last = not self._targets
        if last:
            self.close()

    def poll(self) -> bool:
        """Carry out what arrived; False once closed (the follower then stops)."""
        with self._lock:
            if self.closed or not self._alive():
                self._release()
                return False
            for name in channel_names(self.directory):
                if name.endswith(OUT) and name not in self._readers:
                    self._readers[name] = ChannelReader(self.directory, name)
            now = time.monotonic()
            check = now >= self._check_at
            if check:
                self._check_at = now + CHECK_EVERY
                self.queues.tick()
            for name, reader in list(self._readers.items()):
                gone = check and not reader.owner_alive()
                self._serve(name, reader)
                if gone and name in self._readers:
                    del self._readers[name]
                    self.queues.drop(name)  # its leases return to the queue
                    reader.remove()
                    with contextlib.suppress(OSError):
                        os.unlink(error_path(self.store_path, name))
            return True

    def _serve(self, name: str, reader: ChannelReader) -> None:
        try:
            entries = reader.poll()
        except SowError as exc:
            self._damaged(name, reader, exc)
            return
        parts = name[: -len(OUT)].split("-")  # <pid>-<origin>-<generation>
        origin = parts[1] if len(parts) == 3 else ""
        for entry in entries:
            if entry.timestamp < self.started:
                self.stale += 1  # asked of an earlier writer process (see the module notes)
                continue
            self.requests += 1
            try:
                op, fields = parse(entry.sow_key)
            except ValueError as exc:
                logger.error("outbox %s: a malformed request ignored: %s", name, exc)
                continue
            if op.startswith("queue-"):
                try:
                    self.queues.handle(name, op, entry, fields)
                except Exception:  # a malformed request (a field missing) stops no other
                    logger.exception("outbox %s: a %s request failed", name, op)
                continue
            if op != "publish":
                logger.error("outbox %s: unknown request %r ignored", name, op)
                continue
            for target in self._targets:
                try:
                    target(entry, origin)
                except Exception:  # one bad publish (a malformed message) stops no other
                    logger.exception("outbox %s: a publish to %r failed", name, entry.topic)

    def _damaged(self, name: str, reader: ChannelReader, exc: SowError) -> None:
        """Keep a damaged channel's files aside, say why, and read it no more."""
        self.failures += 1
        logger.error("outbox %s: stopped reading a damaged channel: %s", name, exc)
        reader.close()
        del self._readers[name]
        self.queues.drop(name)  # what it asked after the damage is lost: its leases return
        for file in sorted(os.listdir(self.directory)):
            if file.startswith(name + ".") and file.endswith(".log"):
                with contextlib.suppress(OSError):
                    path = os.path.join(self.directory, file)
                    os.replace(path, path[: -len(".log")] + ".damaged")
        with contextlib.suppress(OSError), open(error_path(self.store_path, name), "w") as fh:
            fh.write(f"{exc}\n")

    def _release(self) -> None:
        self.closed = True
        self.queues.close()
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)  # readers now find no writer serving

    def close(self) -> None:
        """Stop serving; idempotent (the follower drops it at its next poll)."""
        with self._lock:
            self._release()
