"""What the writer's :class:`~sowlib.journal.Journal` and a read-only process's
:class:`~sowlib.journal.followed.FollowedJournal` share: the topics they record, their
bookmarks, and opening a bookmark subscription. Imports ``errors``, ``expr`` and the
journal's own modules.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from sowlib.errors import StoreClosedError
from sowlib.expr import Filter, compile_filter
from sowlib.journal.bookmarks import Position, format_bookmark, parse_bookmark
from sowlib.journal.frames import Entry
from sowlib.journal.subscription import JournalSubscription, subscription_pattern

__all__ = ["JournalReads"]


class JournalReads:
    """The reading half of a journal (its attributes are set by the subclass)."""

    id: int
    directory: str
    _topics: list[tuple[re.Pattern[str], str | None]]
    _lock: threading.RLock
    _closed: bool
    _ids: int
    _readers: tuple[JournalSubscription, ...]

    def covers(self, topic: str, message_type: str | None = None) -> bool:
        """Whether ``topic`` (of ``message_type``) is recorded by the journal."""
        mtype = message_type.lower() if message_type else None
        return any(
            pattern.fullmatch(topic) and (want is None or mtype is None or want == mtype)
            for pattern, want in self._topics
        )

    def bookmark(self, entry: Entry) -> str:
        """The AMPS bookmark of ``entry``."""
        return format_bookmark(self.id, entry.seq)

    def position(self, bookmark: str) -> Position:
        """Parse a bookmark of this journal (``"0"``, ``"0|1|"``, ``"id|seq|"``, a time)."""
        return parse_bookmark(bookmark, self.id)

    def forget(self, sub: JournalSubscription) -> None:
        """Drop ``sub`` (what its ``unsubscribe`` calls)."""
        with self._lock:
            self._readers = tuple(r for r in self._readers if r is not sub)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"journal {self.directory}")

    @property
    def closed(self) -> bool:
        return self._closed

    def _open_subscription(
        self,
        callback: Callable[[Entry], Any],
        topic: str,
        bookmark: str | Position,
        flt: str | Filter | None,
        message_type: str | None,
        oof: bool,
        newest: Callable[[], int],
        replays: bool,
    ) -> tuple[JournalSubscription, Position, int]:
        """A bookmark subscription registered with this journal, not caught up yet:
        ``(subscription, where it starts, newest sequence number at registration)``.

        ``newest()`` gives the last sequence number the journal has (called under the
        lock); a subscription from NOW starts after it. ``replays``: the subscription
        always catches up from the files first (a reader's own tail may lag behind the
        writer), else only when it starts before ``newest()``.

        Raises:
            NotJournaledError: the journal does not record ``topic``.
            QueryOptionError: a malformed bookmark.
            FilterError: a bad filter.
        """
        topic_re = subscription_pattern(topic, self.covers(topic, message_type), message_type)
        position = bookmark if isinstance(bookmark, Position) else self.position(bookmark)
        compiled = compile_filter(flt) if flt else None
        with self._lock:
            self._check_open()
            self._ids += 1
            last = newest()
            live = position.live_only
            if live:
                position = Position(after=last)
            caught_up = live if replays else position.after >= last
            sub = JournalSubscription(
                f"j{self._ids}",
                topic,
                self,
                callback,
                topic_re,
                compiled,
                message_type.lower() if message_type else None,
                oof,
                position,
                None if caught_up else [],
            )
            self._readers = (*self._readers, sub)
        return sub, position, last
