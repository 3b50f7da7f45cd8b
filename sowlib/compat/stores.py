"""The AMPS client's bookmark and publish stores, with their in-process meaning.

A *bookmark store* records what a subscriber has processed: the client logs each
message of a bookmark subscription as it delivers it, the program discards it
(``client.ack(message)``, ``message.ack()`` or ``store.discard_message(message)``)
once processed, and ``bookmark_subscribe(..., Client.Bookmarks.MOST_RECENT,
sub_id=...)`` resumes just after the newest message that was discarded with every
earlier one. :class:`MemoryBookmarkStore` forgets at exit; :class:`LoggedBookmarkStore`
and :class:`MMapBookmarkStore` keep it in a file, so a restarted program resumes.

A *publish store* would keep publishes until the server persisted them; in process a
publish is applied before ``publish`` returns, so :class:`MemoryPublishStore` and
:class:`PublishStore` only count what went through them and never hold anything.

Imports only ``compat.exceptions`` and ``compat.message``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

from sowlib.compat.exceptions import LocalStorageError
from sowlib.compat.message import Message
from sowlib.journal import EPOCH

__all__ = [
    "BookmarkStore",
    "LoggedBookmarkStore",
    "MMapBookmarkStore",
    "MemoryBookmarkStore",
    "MemoryPublishStore",
    "PublishStore",
]


class _Subscription:
    """The logged, not yet settled messages of one subscription, oldest first."""

    def __init__(self, recent: str) -> None:
        self.recent = recent  # newest bookmark discarded with everything before it
        self.pending: dict[int, tuple[str, bool]] = {}  # seq -> (bookmark, discarded)
        self.next_seq = 1


class BookmarkStore:
    """A bookmark store kept in memory (the base of the file-backed stores).

    Example:
        >>> store = MemoryBookmarkStore()
        >>> m = Message("publish", "orders", bookmark="7|1|", sub_id="feed")
        >>> seq = store.log(m)
        >>> store.get_most_recent("feed")
        '0'
        >>> store.discard_message(m)
        >>> store.get_most_recent("feed")
        '7|1|'
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._subs: dict[str, _Subscription] = {}
        self._server_version = 0
        self._resize_handler: Callable[..., object] | None = None

    def _sub(self, sub_id: str) -> _Subscription:
        sub = self._subs.get(sub_id)
        if sub is None:
            sub = self._subs[sub_id] = _Subscription(EPOCH)
        return sub

    def log(self, message: Message) -> int:
        """Record that ``message`` was delivered; returns its sequence in this store."""
        with self._lock:
            sub = self._sub(message.get_sub_id())
            seq, sub.next_seq = sub.next_seq, sub.next_seq + 1
            sub.pending[seq] = (message.get_bookmark(), False)
            message.set_bookmark_seq_no(seq)
            return seq

    def discard(self, sub_id: str, bookmark_seq_no: int) -> None:
        """Mark the ``bookmark_seq_no``-th logged message of ``sub_id`` processed."""
        with self._lock:
            sub = self._subs.get(str(sub_id))
            if sub is None or bookmark_seq_no not in sub.pending:
                return
            mark, _ = sub.pending[bookmark_seq_no]
            sub.pending[bookmark_seq_no] = (mark, True)
            before = sub.recent
            for seq in sorted(sub.pending):
                mark, done = sub.pending[seq]
                if not done:
                    break
                sub.recent = mark
                del sub.pending[seq]
            if sub.recent != before:
                self._recorded(str(sub_id), sub.recent)

    def discard_message(self, message: Message) -> None:
        """Mark ``message`` (logged by :meth:`log`) processed."""
        seq = message.get_bookmark_seq_no()
        if seq:
            self.discard(message.get_sub_id(), seq)

    def is_discarded(self, message: Message) -> bool:
        """Whether ``message`` was delivered and processed before (a duplicate)."""
        seq = message.get_bookmark_seq_no()
        with self._lock:
            sub = self._subs.get(message.get_sub_id())
            if sub is None or not seq or seq >= sub.next_seq:
                return False
            return sub.pending.get(seq, ("", True))[1]

    def get_most_recent(self, sub_id: str) -> str:
        """Where ``MOST_RECENT`` resumes ``sub_id``: its newest settled bookmark, else EPOCH."""
        with self._lock:
            sub = self._subs.get(str(sub_id))
            return sub.recent if sub is not None else EPOCH

    def persisted(self, sub_id: str, bookmark: str) -> None:
        """Accepted: the journal is the server's persistence, there is no ack to await."""

    def get_oldest_bookmark_seq(self, sub_id: str) -> int:
        """The store sequence of the oldest logged, unprocessed message (0: none)."""
        with self._lock:
            sub = self._subs.get(str(sub_id))
            pending = [s for s, (_, done) in (sub.pending.items() if sub else ()) if not done]
            return min(pending, default=0)

    def purge(self, sub_id: str | None = None) -> None:
        """Forget ``sub_id`` (None: everything); its next MOST_RECENT is EPOCH."""
        with self._lock:
            for one in list(self._subs) if sub_id is None else [str(sub_id)]:
                if self._subs.pop(one, None) is not None:
                    self._recorded(one, EPOCH)

    purge_sub_id = purge

    def set_server_version(self, version: int) -> None:
        """Recorded; bookmarks have one format in process."""
        self._server_version = int(version)

    def set_resize_handler(self, handler: Callable[..., object]) -> None:
        """Recorded; the store grows as needed and never calls it."""
        self._resize_handler = handler

    def _recorded(self, sub_id: str, bookmark: str) -> None:
        """Hook: the resume point of ``sub_id`` moved (file stores write it down)."""


MemoryBookmarkStore = BookmarkStore


class LoggedBookmarkStore(BookmarkStore):
    """A bookmark store that survives restarts: resume points in an append-only file.

    Each change of a subscription's resume point appends one JSON line; opening the
    file reads the last line per subscription (a torn last line is ignored) and
    rewrites it compacted.

    Raises:
        LocalStorageError: the file cannot be read, is not a bookmark store, or
            cannot be written.
    """

    def __init__(self, path: str | os.PathLike[str], *args: object) -> None:
        super().__init__()
        self.path = os.fspath(path)
        for sub_id, mark in self._load().items():
            self._sub(sub_id).recent = mark
        self._rewrite()

    def _load(self) -> dict[str, str]:
        try:
            with open(self.path, "rb") as fh:
                lines = fh.read().split(b"\n")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise LocalStorageError(f"bookmark store {self.path}: {exc.strerror}") from None
        found: dict[str, str] = {}
        for number, line in enumerate(lines[:-1], 1):  # the part after the last \n is torn
            try:
                sub_id, mark = json.loads(line)
                if not isinstance(sub_id, str) or not isinstance(mark, str):
                    raise ValueError("not two strings")
            except ValueError as exc:
                raise LocalStorageError(
                    f"bookmark store {self.path}: line {number} is not a bookmark entry ({exc})"
                ) from None
            found[sub_id] = mark
        return {s: m for s, m in found.items() if m != EPOCH}

    def _rewrite(self) -> None:
        tmp = self.path + ".tmp"
        body = "".join(json.dumps([s, sub.recent]) + "\n" for s, sub in self._subs.items()).encode()
        try:
            with open(tmp, "wb") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise LocalStorageError(f"bookmark store {self.path}: {exc.strerror}") from None

    def _recorded(self, sub_id: str, bookmark: str) -> None:
        line = (json.dumps([sub_id, bookmark]) + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise LocalStorageError(f"bookmark store {self.path}: {exc.strerror}") from None


class MMapBookmarkStore(LoggedBookmarkStore):
    """The real client's memory-mapped bookmark store: the same file store here."""


class PublishStore:
    """A publish store: publishes go through it and are settled at once.

    Every publish the client makes while the store is set counts (:attr:`stored`);
    nothing is ever unpersisted, so there is nothing to replay.

    Example:
        >>> store = MemoryPublishStore()
        >>> store.store(Message("publish", "orders", sequence=1))
        1
        >>> store.stored, store.get_unpersisted_count()
        (1, 0)
    """

    def __init__(self, *args: object) -> None:
        self.stored = 0
        self.last_sequence = 0

    def store(self, message: Message) -> int:
        """Count one publish; returns its sequence number."""
        self.stored += 1
        self.last_sequence = message.get_sequence() or self.last_sequence + 1
        return self.last_sequence

    def get_unpersisted_count(self) -> int:
        """Always 0: a publish is in the store when ``publish`` returns."""
        return 0

    def get_lowest_unpersisted(self) -> int:
        """Always 0: nothing is unpersisted."""
        return 0

    def get_last_persisted(self) -> int:
        return self.last_sequence

    def discard_up_to(self, sequence: int) -> None:
        """Accepted: nothing is held."""

    def replay(self, handler: Callable[[Message], object]) -> int:
        """Nothing to replay; returns 0."""
        return 0

    def replay_single(self, handler: Callable[[Message], object], sequence: int) -> bool:
        """Nothing to replay; returns False."""
        return False

    def set_resize_handler(self, handler: Callable[..., object]) -> None:
        """Accepted: the store never grows."""


MemoryPublishStore = PublishStore
