"""The transaction log: every publish, delta publish and delete of chosen topics, replayable.

Imports ``errors``, ``units``, ``codecs``, ``expr``, ``storage.fs`` (the file-system
seam) and the journal's own modules; reaches SOW topics only through their public API.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from sowlib.config.queues import QueueDef
from sowlib.errors import (
    ConfigError,
    CorruptRecordError,
    ReadOnlyError,
)
from sowlib.expr import Filter
from sowlib.journal.bookmarks import Position, format_bookmark
from sowlib.journal.log import Entry, JournalLog
from sowlib.journal.reading import JournalReads
from sowlib.journal.refill import (
    RestorableTopic,
    bring_in_line,
    entries_of,
    refill,
    topic_id,
)
from sowlib.journal.subscription import JournalSubscription, compile_topic
from sowlib.storage.fs import FileSystem, open_regular
from sowlib.subscriptions import Message as Event
from sowlib.units import parse_duration, parse_size

__all__ = ["Journal", "JournalSubscription", "RestorableTopic", "WatchedTopic"]

logger = logging.getLogger(__name__)
Callback = Callable[[Entry], object]


class WatchedTopic(Protocol):
    """The part of a SOW :class:`~sowlib.topic.Topic` a journal uses."""

    name: str

    @property
    def message_type(self) -> str: ...

    def sow_and_subscribe(
        self, callback: Callable[[Event], object], filter: Any = None, *, oof: bool = False
    ) -> Any: ...


class _Store(Protocol):
    def topics(self) -> Sequence[RestorableTopic]: ...


class Journal(JournalReads):
    """A transaction log in ``directory`` recording the topics named in ``topics``.

    Records publishes (the merged record for a delta publish), deletes and
    expirations of watched SOW topics (:meth:`watch`) and whatever is passed to
    :meth:`record` (pub/sub topics through :mod:`sowlib.compat`), each with an AMPS
    bookmark ``<journal id>|<seq>|``. :meth:`subscribe` replays from a bookmark,
    then continues live with no gap and no duplicate. An entry is written before
    the publish that caused it returns.

    Args:
        directory: the journal directory (AMPS ``JournalDirectory``).
        topics: topic names or regular expressions (AMPS ``TransactionLog/Topic``),
            optionally as ``(name, message_type)`` pairs.
        retention: drop whole journal files whose entries are all older than this
            (``"7d"``, seconds); None keeps everything.
        file_size: size of one journal file before a new one starts (``"64MB"``).
        sync: fsync every entry (survives power loss, slower).
        clock: the time source for entry timestamps.
        fs: the file-system seam the journal files are written through (tests inject
            faults there).
    Raises:
        ConfigError: a bad topic pattern, retention or size.
        CorruptRecordError: a damaged journal file (``sowlib verify --repair`` salvages).
        FormatVersionError: a file in the directory that is not a journal file.

    Example:
        >>> import tempfile
        >>> j = Journal(tempfile.mkdtemp(), ["chat"])
        >>> e = j.record("publish", "chat", "json", b'{"t": "hi"}')
        >>> j.bookmark(e) == f"{j.id}|1|"
        True
        >>> j.close()
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        topics: Sequence[str | tuple[str, str | None]],
        *,
        retention: str | float | None = None,
        file_size: str | int = "64MB",
        sync: bool = False,
        clock: Callable[[], float] = time.time,
        fs: FileSystem | None = None,
    ) -> None:
        if isinstance(topics, str):
            topics = [topics]
        self._topics: list[tuple[re.Pattern[str], str | None]] = []
        for item in topics:
            name, mtype = (item, None) if isinstance(item, str) else item
            self._topics.append((compile_topic(name), mtype.lower() if mtype else None))
        self.retention = None if retention is None else parse_duration(retention, "retention")
        self.directory = os.path.abspath(os.fspath(directory))
        self._log = JournalLog(
            self.directory, file_size=parse_size(file_size, "file_size"), sync=sync, fs=fs
        )
        self.id = self._load_id()
        self._clock = clock
        self._lock = threading.RLock()
        self._fanout: deque[Entry] = deque()  # entries being offered to the readers
        self._readers: tuple[JournalSubscription, ...] = ()
        # Keyed by the topic itself, weakly: an id() is reused once a topic is collected.
        self._watched: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._ids = 0
        self._closed = False
        self.queue_definitions: tuple[QueueDef, ...] = ()  # <Queue>s run over this log
        self.trim()

    def _load_id(self) -> int:
        """The journal id (bookmarks carry it), checked against the state file's copy."""
        path = os.path.join(self.directory, "journal.id")
        state = self._log.state
        try:
            with os.fdopen(open_regular(path, os.O_RDONLY, "read"), "rb") as fh:
                text = fh.read(64).decode("ascii", "replace").strip()
            if not (text.isascii() and text.isdigit()):
                raise ConfigError(path, f"journal id {text!r} is not a number")
            ident = int(text)
        except FileNotFoundError:
            if state.id:
                raise CorruptRecordError(path, 0, "the journal id file is missing") from None
            ident = secrets.randbits(63) or 1
            created = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, "create")
            with os.fdopen(created, "w", encoding="ascii") as fh:
                fh.write(f"{ident}\n")
        if state.id and state.id != ident:
            raise CorruptRecordError(path, 0, "the journal id does not match journal.state")
        if not state.id:
            state.id = ident
        return ident

    # ------------------------------------------------------------------ topics

    def watch(self, store: _Store, *, restore: bool = True) -> int:
        """Record every covered topic of ``store`` from now on; returns how many are watched.

        Call again after creating topics; :mod:`sowlib.compat` does so itself.
        ``restore``: see :meth:`watch_topic`.
        """
        for topic in store.topics():
            self.watch_topic(topic, restore=restore)
        return len(self._watched)

    def watch_topic(self, topic: RestorableTopic, *, restore: bool = True) -> bool:
        """Record ``topic``'s changes if the journal covers it; idempotent.

        With ``restore``, the topic is first brought in line with the journal (AMPS
        order: the transaction log is the truth). An empty topic is refilled
        (:meth:`restore`), as AMPS rebuilds a missing SOW file and
        refills a transient topic on restart, from its ``RecoveryPoint``
        (``options["recovery_point"]``: ``epoch``, the default; ``now``, nothing; a
        bookmark or a timestamp); from then on the journal holds the topic. Any other
        topic is reconciled: every key the journal mentions gets its journalled state
        and, for a topic the journal holds (nothing of it trimmed by retention), keys
        it does not mention are removed (written to the SOW, never journalled, so
        never acknowledged). A refill or reconciliation cut short by a crash is redone
        by the next open: the state file says it was in progress.

        From then on a change of the topic is acknowledged only once the journal holds
        it: a journal write that fails (a full disk) fails the publish or delete.

        Raises:
            QueryOptionError: a recovery point that is not a bookmark of this journal.
            CorruptRecordError: a damaged journal file.

        Returns:
            Whether the journal watches the topic.
        """
        with self._lock:
            self._check_open()
            if topic in self._watched or not self.covers(topic.name, topic.message_type):
                return topic in self._watched
            ident = topic_id(topic.name, topic.message_type)
            state = self._log.state
            if restore:
                before = dict(state.owned), list(state.refilling)
                try:
                    self._bring_in_line(topic, ident)
                except ReadOnlyError:  # a reader cannot refill; it sees what the writer stored
                    state.owned, state.refilling = before
                    self._log.save_state()
            elif ident not in state.owned and len(topic) == 0:
                self._own(ident, format_bookmark(self.id, self._log.last_seq))
            mtype = topic.message_type

            def changed(event: Event) -> None:
                if event.command == "publish":
                    kind = "publish"
                elif event.command == "oof" and event.reason in ("deleted", "expired"):
                    kind = "delete" if event.reason == "deleted" else "expire"
                else:
                    return  # the initial query that puts every record in focus
                self.record(
                    kind,
                    event.topic,
                    mtype,
                    event.data,
                    sow_key=event.sow_key or "",
                    correlation_id=event.correlation_id,
                    expiration=event.expiration,
                )

            # oof=True: the subscription remembers every key it has seen, so deletes and
            # expirations of any record reach the journal as OOF messages. ``raises``: a
            # journal write that fails fails the change (it is not acknowledged).
            sub = topic.sow_and_subscribe(changed, oof=True)
            sub.raises = True
            self._watched[topic] = sub
            return True

    def _own(self, ident: str, start: str) -> None:
        self._log.state.owned[ident] = start
        self._log.save_state()

    def _bring_in_line(self, topic: RestorableTopic, ident: str) -> None:
        """Refill or reconcile ``topic`` from the journal (see :meth:`watch_topic`)."""
        state = self._log.state
        if ident not in state.refilling and len(topic) == 0:
            options = getattr(getattr(topic, "config", None), "options", None) or {}
            start_text = str(options.get("recovery_point") or "epoch")
            if self.position(start_text).live_only:  # "now" stays the moment of this refill
                start_text = format_bookmark(self.id, self._log.last_seq)
            self._own(ident, start_text)
        bring_in_line(self._log, topic, ident, self.position, self._clock())

    def restore(self, topic: RestorableTopic, after: int | str | Position = 0) -> int:
        """Rebuild ``topic`` from the journal (AMPS recovery of a missing SOW file).

        Applies, in order, every retained publish and removal of the topic after
        ``after`` (a sequence number, a bookmark or timestamp of this journal, or
        ``"epoch"``) through the topic's public API; records whose stored
        expiration has passed are removed. Call it on an empty (or older) topic
        *before* the journal watches it, then :meth:`watch_topic`.

        Returns:
            How many entries were applied.
        Raises:
            ConfigError: the journal already watches ``topic`` (it would record the
                replay again) or does not cover it.
        """
        with self._lock:
            self._check_open()
            if topic in self._watched:
                raise ConfigError("restore", f"topic {topic.name!r} is watched; restore first")
            if not self.covers(topic.name, topic.message_type):
                raise ConfigError("restore", f"the journal does not record {topic.name!r}")
            if isinstance(after, Position):
                start = after
            elif isinstance(after, str):
                start = self.position(after)
            else:
                start = Position(after=after)
            if start.live_only:
                return 0
            return refill(topic, entries_of(self._log, topic, start), self._clock())

    # ------------------------------------------------------------------ writing

    def record(
        self,
        kind: str,
        topic: str,
        message_type: str,
        data: bytes,
        *,
        sow_key: str = "",
        correlation_id: bytes = b"",
        expiration: float | None = None,
    ) -> Entry:
        """Append one entry and deliver it to live bookmark subscriptions; O(1).

        Raises:
            StoreClosedError: the journal is closed.
            StoreFullError: no room for the entry; nothing of it was written.
            StorePathError: another operating-system error writing it.
        """
        with self._lock:
            self._check_open()
            before = self._log.segment_count
            entry = Entry(
                self._log.next_seq,
                self._clock(),
                kind,
                topic,
                message_type,
                bytes(data),
                sow_key,
                bytes(correlation_id or b""),
                expiration,
            )
            self._log.append(entry)
            if self.retention is not None and self._log.segment_count != before:
                self.trim()  # a new journal file was started
            # A subscriber that publishes records again from inside this loop: that
            # entry waits until every reader has had this one (journal order for all).
            self._fanout.append(entry)
            if len(self._fanout) == 1:
                try:
                    while self._fanout:
                        for reader in self._readers:
                            reader.offer(self._fanout[0])
                        self._fanout.popleft()
                finally:
                    self._fanout.clear()
            return entry

    def trim(self) -> int:
        """Apply the retention now; returns how many journal files were removed."""
        if self.retention is None:
            return 0
        limit = self._clock() - self.retention
        with self._lock:
            return self._log.trim(lambda stamp: stamp >= limit)

    # ------------------------------------------------------------------ reading

    def last_bookmark(self) -> str:
        """The bookmark of the newest entry (``"0"`` when the journal is empty)."""
        seq = self._log.last_seq
        return format_bookmark(self.id, seq) if seq else "0"

    def replay(self, after: int = 0) -> Iterator[Entry]:
        """Every retained entry after sequence number ``after``, oldest first."""
        with self._lock:
            self._check_open()
            end = self._log.last_seq
        for entry in self._log.read(after):
            if entry.seq > end:
                return
            yield entry

    def subscribe(
        self,
        callback: Callback,
        topic: str,
        bookmark: str | Position = "0",
        *,
        filter: str | Filter | None = None,
        message_type: str | None = None,
        oof: bool = False,
    ) -> JournalSubscription:
        """Replay ``topic`` (a name or regex) from ``bookmark``, then continue live.

        Entries up to the moment of the call are replayed from the files, then
        those that arrived meanwhile, then live ones as they are recorded: none is
        missed or delivered twice. Deletes and expirations are delivered only with
        ``oof=True``.

        Raises:
            NotJournaledError: the journal does not record ``topic``.
            QueryOptionError: a malformed bookmark.
            FilterError: a bad filter.
        """
        sub, position, end = self._open_subscription(
            callback, topic, bookmark, filter, message_type, oof, lambda: self._log.last_seq, False
        )
        sub.catch_up(self._log.read(position.after), end, self._lock)
        return sub

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        """Commit and fsync the journal (survives power loss; damage before this point
        is reported, never cut).

        Raises:
            StoreFullError: no room for the commit mark.
        """
        with self._lock:
            self._check_open()
            self._log.flush()

    def close(self) -> None:
        """Stop watching topics, commit and close the files; idempotent.

        Raises:
            StoreFullError: no room for the commit mark (the journal is closed anyway;
                its entries since the last commit stay readable).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for sub in self._watched.values():
                sub.unsubscribe()
            self._watched.clear()
            for reader in self._readers:
                reader.detach()
            self._readers = ()
            self._log.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = [p.pattern for p, _ in self._topics]
        return f"Journal({self.directory!r}, topics={names!r}, last_seq={self._log.last_seq})"
