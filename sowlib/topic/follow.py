"""Live subscriptions in a read-only process: following the writer's log.

A read-only topic with at least one subscription is *followed*: one thread per
process (``sowlib-follow``, :class:`Follower`) polls every followed topic when the
writer's directory changes (see :class:`Follower` for how it is woken), and each
poll is the topic's ``refresh``. While a topic
has subscribers its refresh applies the writer's new records one at a time and
turns each into the change the writer's own subscribers saw
(:func:`apply_announced`): a put is a ``publish`` judged against the record it
replaces (so OOF ``match`` and delta subscriptions work as in the writer), a
delete tombstone an OOF ``deleted``, an expiration (the writer's tombstone, or the
reader's own clock passing the record's expiration, :func:`expire_announced`) an
OOF ``expired``. When the writer compacted (replaced the file),
:func:`announce_reopen` diffs the state before and after by SOW key and sequence
number: only what changed meanwhile is delivered.

Imports ``errors``, ``index.types``, ``storage``, ``subscriptions`` and the sibling
``parts``; never the facade (the Topic hands in its parts and a poll
callable).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

from sowlib.errors import SowError, StoreClosedError
from sowlib.index.types import Key
from sowlib.storage import LogRecord, RecordKind
from sowlib.storage.bell import Watcher, listen
from sowlib.subscriptions import RecordLike
from sowlib.topic.parts import Parts

__all__ = [
    "FOLLOWER",
    "INTERVAL",
    "Follower",
    "announce_reopen",
    "apply_announced",
    "expire_announced",
]

#: Seconds between two polls while active, or always where a change cannot be watched
#: (a poll that finds nothing new is one ``stat`` and one ``fstat`` of the log file).
INTERVAL = 0.001
#: The longest the thread waits for a change while everything followed is watched.
IDLE = 0.05
#: Set to ``1`` in the environment, the follower never watches: it polls every
#: ``INTERVAL`` (the reference behaviour the watching one is tested against).
POLL_ENV = "SOWLIB_FOLLOW_POLL"
#: Seconds between two marks on a bell (a writer rings while a mark is fresh).
MARK_EVERY = 1.0
THREAD_NAME = "sowlib-follow"
logger = logging.getLogger(__name__)
#: Seconds :meth:`Follower.unfollow` waits for the thread to end.
JOIN_TIMEOUT = 1.0

_PUT, _DELETE = RecordKind.PUT, RecordKind.DELETE


def apply_announced(parts: Parts, records: Sequence[LogRecord]) -> None:
    """Apply the writer's ``records`` in order, announcing each to ``parts.subs``.

    The record a put replaces is read before the put is applied, so the subscribers
    judge the change exactly as the writer's did (OOF ``match``, delta fields). A
    subscription that raises (``Subscription.raises``) does not stop the others or the
    apply: every record is applied, then the first error is raised.
    O(records x subscriptions).
    """
    writer, views, keys, subs = parts.writer, parts.views, parts.keys, parts.subs
    failure: Exception | None = None
    for rec in records:
        key = keys.key_of(rec.key)
        old = views.record(key) if key in keys else None
        writer.apply(rec)
        try:
            if rec.kind == _PUT:
                new = views.record(key)
                if new is not None:
                    subs.on_change("publish", rec.key, old, new)
            elif old is not None:
                subs.on_change("delete" if rec.kind == _DELETE else "expire", rec.key, old, None)
        except Exception as exc:  # a raising subscription: every record is still applied
            failure = failure or exc
    if failure is not None:
        raise failure


def expire_announced(parts: Parts, now: float) -> int:
    """Forget every record due at ``now`` (a reader appends no tombstone), announcing
    each as an expiration; returns how many. The writer's later tombstone for the same
    record finds it gone and announces nothing."""
    count = 0
    keys, views, subs = parts.keys, parts.views, parts.subs
    for when, seq, key in parts.expiry.pop_due(now):
        head = keys.header(key)
        if head is None or head.seq != seq or head.expiration != when:
            continue  # superseded by a later publish or already deleted
        old = views.record(key)
        parts.writer.forget(key)
        if old is not None:
            subs.on_change("expire", keys.text_of(key), old, None)
        count += 1
    return count


def _by_text(parts: Parts) -> dict[str, tuple[Key, int]]:
    keymap = parts.keys
    live = keymap.keys()
    out: dict[str, tuple[Key, int]] = {}
    for key in live:
        head = keymap.header(key)
        if head is not None:
            out[keymap.text_of(key)] = (key, head.seq)
    return out


def announce_reopen(old: Parts, new: Parts, now: float) -> int:
    """Announce what differs between ``old`` (the replaced file, still open) and ``new``.

    A key only in ``old`` was deleted (expired when its expiration has passed); a key
    whose sequence number differs, or only in ``new``, was published (judged against
    the old record). Removals first, then publishes in sequence order; a record the
    reader already had (same sequence number) is not delivered again. Returns the
    number of changes announced; O(records of both).
    """
    before = _by_text(old)
    changed: list[tuple[int, str, Key | None, Key]] = []
    for text, (key, seq) in _by_text(new).items():
        was = before.pop(text, None)
        if was is None or was[1] != seq:
            changed.append((seq, text, None if was is None else was[0], key))
    subs = new.subs
    for text, (key, _) in before.items():
        rec: RecordLike | None = old.views.record(key)
        if rec is not None:
            expired = rec.expiration is not None and rec.expiration <= now
            subs.on_change("expire" if expired else "delete", text, rec, None)
    changed.sort(key=lambda c: c[0])
    for _, text, old_key, key in changed:
        prev = None if old_key is None else old.views.record(old_key)
        rec = new.views.record(key)
        if rec is not None:
            subs.on_change("publish", text, prev, rec)
    return len(before) + len(changed)


class _Followed:
    """One followed thing: its poll, the directory to watch, whether its writer rings
    a bell there (a SOW log written through a map) or the kernel reports its writes
    (a journal written with ``write``)."""

    def __init__(self, poll: Callable[[], bool], watch: str | None, bell: bool) -> None:
        self.poll = poll
        self.watch = watch
        self.bell = bell
        self.armed = False  # a change in ``watch`` wakes the thread
        self.renewed = False  # follow() was called again while it was followed
        self.errors = 0


class Follower:
    """Polls followed things on one thread, started on the first and ended after the last.

    [R] Waking: each followed thing names the directory of its files; the thread waits
    for a change there (Linux inotify, :class:`~sowlib.storage.bell.Watcher`): a
    journal's ``write`` is reported by the kernel, a SOW log's writer rings the
    directory's bell after every append (:mod:`sowlib.storage.bell`) while this thread
    marks the directory as listened to (every second). Woken, it polls everything
    followed, then waits again, at most :data:`IDLE` seconds (an idle process costs a
    wake-up every ``IDLE`` seconds; expirations on the reader's clock are delivered
    then at the latest). Where a thing cannot be watched (no inotify, a directory it
    may not write its mark to), the thread polls every ``interval`` as long as it is
    followed, as it did before the bell (and always with ``SOWLIB_FOLLOW_POLL=1``).

    A poll callable returns False when its thing no longer needs following (no
    subscriber left, or closed); it is then dropped, and the thread ends when none
    is left. A poll that raises a :class:`~sowlib.errors.SowError` is dropped too
    (its store closed under it); another exception is logged and counted, and it is
    polled again. :meth:`follow` and :meth:`unfollow` must not be called holding a
    lock a poll takes (the topic's lock).
    """

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.wakes = 0  # times a change woke the thread (for tests and benchmarks)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._entries: dict[int, _Followed] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def running(self) -> bool:
        """Whether the polling thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def follow(
        self,
        ident: object,
        poll: Callable[[], bool],
        watch: str | None = None,
        *,
        bell: bool = False,
    ) -> None:
        """Call ``poll()`` when ``watch`` (a directory) changes, or every :attr:`interval`,
        until it returns False (idempotent while ``ident`` is followed)."""
        with self._lock:
            entry = self._entries.get(id(ident))
            if entry is not None:
                entry.renewed = True  # a poll that just said False must not drop it
                return
            self._entries[id(ident)] = _Followed(poll, watch, bell)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()

    def unfollow(self, ident: object) -> None:
        """Forget ``ident`` (its topic is closed); when nothing else is followed, wait
        (a bounded time) for the thread to end. A poll running now may still finish:
        a handler it runs may wait for a lock the caller holds (the store's, in a close).
        """
        with self._lock:
            self._entries.pop(id(ident), None)
            others = bool(self._entries)
            thread = self._thread
        if not others and thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_TIMEOUT)

    def _run(self) -> None:
        watcher = Watcher(enabled=os.environ.get(POLL_ENV) != "1")
        marked = 0.0
        try:
            while True:
                with self._lock:
                    entries = list(self._entries.items())
                    if not entries:
                        self._thread = None
                        return
                now = time.monotonic()
                if now >= marked:  # arm new entries, and tell the writers we listen
                    marked = now + MARK_EVERY
                    for _, entry in entries:
                        entry.armed = self._arm(watcher, entry)
                for ident, entry in entries:
                    self._poll(ident, entry)
                armed = all(e.armed for _, e in entries)
                if watcher.wait(IDLE if armed else self.interval):
                    self.wakes += 1
        finally:
            watcher.close()

    @staticmethod
    def _arm(watcher: Watcher, entry: _Followed) -> bool:
        if entry.watch is None:
            return False
        if entry.bell:
            return watcher.watch(entry.watch) and listen(entry.watch)
        where = entry.watch  # a journal not created yet: its creation wakes the parent
        while not os.path.isdir(where) and os.path.dirname(where) != where:
            where = os.path.dirname(where)
        return watcher.watch(where)

    def _poll(self, ident: int, entry: _Followed) -> None:
        # A handler's exit() (SystemExit on this thread, as on a client's receive
        # thread) ends that delivery, never the following of everything else.
        keep = True
        try:
            keep = entry.poll()
        except StoreClosedError:  # closed under the poll: stop following it
            keep = False
        except SowError as exc:  # a damaged file: following it cannot go on
            logger.error("%s: stopped following: %s", THREAD_NAME, exc)
            keep = False
        except SystemExit:
            keep = True  # a handler's exit() ended that delivery, not the following
        except Exception:
            entry.errors += 1
            logger.exception("%s: a poll raised", THREAD_NAME)
        if not keep:
            with self._lock:
                if entry.renewed:  # followed again meanwhile: poll it once more
                    entry.renewed = False
                elif self._entries.get(ident) is entry:
                    del self._entries[ident]


#: The process's follower (every read-only store of the process shares its thread).
FOLLOWER = Follower()
