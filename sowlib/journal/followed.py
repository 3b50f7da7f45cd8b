"""The writer's transaction log as a read-only process sees it.

A store opened read-only from a configuration with a ``<TransactionLog>`` gets a
:class:`FollowedJournal` as its ``journal``: bookmark subscriptions replay the
writer's journal files and then continue live as the writer appends, the entries
reaching the process through :meth:`FollowedJournal.poll` (the process's follower
thread calls it; :mod:`sowlib.compat` starts that). It writes nothing: not an entry,
not the state file, not a torn tail's repair. Imports ``errors`` and the journal's
own modules.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sowlib.config.queues import QueueDef
from sowlib.errors import ConfigError, ReadOnlyError
from sowlib.expr import Filter
from sowlib.journal.bookmarks import Position, format_bookmark
from sowlib.journal.frames import Entry
from sowlib.journal.reading import JournalReads
from sowlib.journal.subscription import JournalSubscription, compile_topic
from sowlib.journal.tail import CHUNK_ENTRIES, LogTail, offer_each

__all__ = ["FollowedJournal"]


class FollowedJournal(JournalReads):
    """The journal in ``directory`` (written by another process), followed read-only.

    Args:
        directory: the writer's ``JournalDirectory``.
        topics: the ``<TransactionLog><Topic>``s, as for :class:`~sowlib.journal.Journal`.
        queue_definitions: the configuration's queues (a read-only process consumes
            them through the writer's process, :mod:`sowlib.compat.queuelink`).
    Raises:
        ConfigError: no journal in ``directory`` (its writer has never opened the
            store), a damaged id file, a bad topic pattern.
    """

    readonly = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        topics: Sequence[str | tuple[str, str | None]],
        *,
        queue_definitions: Sequence[QueueDef] = (),
    ) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        self._topics: list[tuple[re.Pattern[str], str | None]] = []
        for item in [topics] if isinstance(topics, str) else topics:
            name, mtype = (item, None) if isinstance(item, str) else item
            self._topics.append((compile_topic(name), mtype.lower() if mtype else None))
        self.queue_definitions = tuple(queue_definitions)
        path = os.path.join(self.directory, "journal.id")
        try:
            with open(path, "rb") as fh:
                text = fh.read(64).decode("ascii", "replace").strip()
        except FileNotFoundError:
            raise ConfigError(
                "TransactionLog/JournalDirectory",
                f"{self.directory} holds no transaction log yet: open the store as its"
                " writer first (a read-only process follows the writer's journal)",
            ) from None
        if not text.isdigit():
            raise ConfigError(path, f"journal id {text!r} is not a number")
        self.id = int(text)
        self._lock = threading.RLock()
        self._tail = LogTail.at_end(self.directory)
        self._readers: tuple[JournalSubscription, ...] = ()
        self._ids = 0
        self._closed = False

    # ------------------------------------------------------------------ what it records

    def watch(self, store: Any, *, restore: bool = True) -> int:
        """A reader records nothing (its writer does): watches no topic."""
        del store, restore
        return 0

    def watch_topic(self, topic: Any, *, restore: bool = True) -> bool:
        """A reader records nothing: False."""
        del topic, restore
        return False

    def record(self, kind: str, topic: str, *args: Any, **kwargs: Any) -> Entry:
        """Refused: only the writer's process appends to the journal.

        Raises:
            ReadOnlyError: always.
        """
        del kind, args, kwargs
        raise ReadOnlyError(f"the transaction log {self.directory}", f"record a {topic!r} entry")

    # ------------------------------------------------------------------ reading

    def last_bookmark(self) -> str:
        """The bookmark of the newest entry this process has seen (``"0"``: none)."""
        seq = self._tail.after
        return format_bookmark(self.id, seq) if seq else "0"

    def replay(self, after: int = 0, end: int | None = None) -> Iterator[Entry]:
        """Every retained entry after sequence number ``after`` (up to ``end``; None:
        what is written now), oldest first.

        Raises:
            CorruptRecordError: a damaged entry.
        """
        self._check_open()
        tail = LogTail(self.directory, after)
        try:
            while True:
                batch = tail.poll(CHUNK_ENTRIES)
                for entry in batch:
                    if end is not None and entry.seq > end:
                        return
                    yield entry
                if not batch:
                    return
        finally:
            tail.close()

    def subscribe(
        self,
        callback: Callable[[Entry], object],
        topic: str,
        bookmark: str | Position = "0",
        *,
        filter: str | Filter | None = None,
        message_type: str | None = None,
        oof: bool = False,
    ) -> JournalSubscription:
        """Replay ``topic`` (a name or regex) from ``bookmark``, then continue live as
        :meth:`poll` finds the writer's new entries (see
        :meth:`sowlib.journal.Journal.subscribe`).

        Raises:
            NotJournaledError: the journal does not record ``topic``.
            QueryOptionError: a malformed bookmark.
            FilterError: a bad filter.
        """
        sub, position, _ = self._open_subscription(
            callback, topic, bookmark, filter, message_type, oof, lambda: self._tail.after, True
        )
        # Everything written now is replayed from the files (this process's own tail may
        # lag behind the writer); what the tail offers meanwhile comes after, unrepeated.
        sub.catch_up(self.replay(position.after), None, self._lock)
        return sub

    def poll(self) -> bool:
        """Offer the writer's new entries to the subscriptions, in order; False once
        closed (the follower then stops calling it).

        Raises:
            CorruptRecordError: a damaged entry in the writer's journal.
        """
        with self._lock:
            if self._closed:
                return False
            offer_each(self._tail.poll(), [reader.offer for reader in self._readers])
            return True

    @property
    def fd(self) -> int | None:
        """The file descriptor of the journal file being followed (None between files)."""
        return self._tail.fd

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        """Nothing to flush in a reader."""

    def close(self) -> None:
        """Stop every subscription and release the file; idempotent."""
        with self._lock:
            self._closed = True
            for reader in self._readers:
                reader.detach()
            self._readers = ()
            self._tail.close()

    def __repr__(self) -> str:
        return f"FollowedJournal({self.directory!r}, seen={self._tail.after})"
