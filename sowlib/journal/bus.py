"""The pub/sub bus: a store's publishes to topics without a SOW, for other processes.

A publish to a topic that has no SOW and that the transaction log does not record
is kept nowhere in AMPS; subscribers in the publishing process get it in memory. For
subscribers in *other* processes (a store opened read-only) the writer also appends
it to the bus, a small journal-format log in ``<store directory>/.pubsub`` that
read-only processes follow (:class:`~sowlib.journal.tail.LogTail`). The bus is not
history: it keeps its newest :data:`KEEP` files of :data:`FILE_SIZE` bytes, a
bookmark subscription never reads it, and it is not replayed after a restart (a
reader starts following it at its end). Imports ``errors`` and the journal's
``log``/``frames``.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable

from sowlib.errors import StoreClosedError
from sowlib.journal.frames import Entry
from sowlib.journal.log import JournalLog

__all__ = ["BUS_DIR", "FILE_SIZE", "KEEP", "PubSubBus", "bus_directory"]

#: The bus's directory under the store directory.
BUS_DIR = ".pubsub"
#: Size of one bus file.
FILE_SIZE = 4 << 20
#: Bus files kept (a reader more than ``(KEEP - 1) * FILE_SIZE`` bytes behind loses messages).
KEEP = 4


def bus_directory(store_path: str) -> str:
    """The bus directory of the store in ``store_path``."""
    return os.path.join(store_path, BUS_DIR)


class PubSubBus:
    """The writing end of a store's bus; one per store directory (the store's writer
    lock makes its process the only writer).

    Args:
        directory: the bus directory (created if missing).
        clock: the time source for entry timestamps.
        file_size: size of one bus file.
    Raises:
        CorruptRecordError: a damaged bus file (``sowlib verify --repair`` salvages).
        StorePathError: the directory cannot be created or written.
    """

    def __init__(
        self,
        directory: str,
        clock: Callable[[], float] = time.time,
        file_size: int = FILE_SIZE,
    ) -> None:
        self.directory = directory
        self._clock = clock
        self._log = JournalLog(directory, file_size=file_size)
        self._lock = threading.Lock()
        self._closed = False

    def append(
        self,
        topic: str,
        message_type: str,
        data: bytes,
        correlation_id: bytes = b"",
        expiration: float | None = None,
        origin: str = "",
    ) -> Entry:
        """Append one publish; readers see it once this returns. O(1).

        ``origin`` names the read-only process that asked the writer to publish it
        (:mod:`sowlib.journal.outbox`; kept in the entry's ``sow_key``): that process
        delivered it to its own subscribers already and skips it.

        Raises:
            StoreFullError: no room for it (nothing of it was written).
            StoreClosedError: the bus is closed.
        """
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"pub/sub bus {self.directory}")
            log = self._log
            entry = Entry(
                log.next_seq,
                self._clock(),
                "publish",
                topic,
                message_type,
                bytes(data),
                origin,
                correlation_id,
                expiration,
            )
            before = log.segment_count
            log.append(entry)
            if log.segment_count != before and log.segment_count > KEEP:
                excess = log.segment_count - KEEP
                calls = itertools.count()
                log.trim(lambda _stamp: next(calls) >= excess)
            return entry

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest entry (0: none)."""
        return self._log.last_seq

    def close(self) -> None:
        """Commit and close the bus file; idempotent."""
        with self._lock:
            self._closed = True
            self._log.close()
