"""Live subscriptions in a read-only process: following the writer's log.

A read-only topic with at least one subscription is *followed*: one thread per
process (``sowlib-follow``, :class:`Follower`) polls every followed topic every
:data:`INTERVAL` seconds, and each poll is the topic's ``refresh``. While a topic
has subscribers its refresh applies the writer's new records one at a time and
turns each into the change the writer's own subscribers saw
(:func:`apply_announced`): a put is a ``publish`` judged against the record it
replaces (so OOF ``match`` and delta subscriptions work as in the writer), a
delete tombstone an OOF ``deleted``, an expiration (the writer's tombstone, or the
reader's own clock passing the record's expiration, :func:`expire_announced`) an
OOF ``expired``. When the writer compacted (replaced the file),
:func:`announce_reopen` diffs the state before and after by SOW key and sequence
number: only what changed meanwhile is delivered.

Imports ``errors``, ``index.types``, ``storage``, ``subscriptions``, ``timer`` and
the sibling ``parts``; never the facade (the Topic hands in its parts and a poll
callable).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence

from sowlib.errors import SowError
from sowlib.index.types import Key
from sowlib.storage import LogRecord, RecordKind
from sowlib.subscriptions import RecordLike
from sowlib.timer import Timer, TimerEntry
from sowlib.topic.parts import Parts

__all__ = [
    "FOLLOWER",
    "INTERVAL",
    "Follower",
    "announce_reopen",
    "apply_announced",
    "expire_announced",
]

#: Seconds between two polls of a followed topic (a poll that finds nothing new is one
#: ``stat`` and one ``fstat`` of the log file).
INTERVAL = 0.001
THREAD_NAME = "sowlib-follow"
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


class Follower:
    """Polls followed topics on one thread, started on the first and ended after the last.

    The polls are entries of a :class:`~sowlib.timer.Timer` (cancellation, error
    counting and logging are the timer's); the thread is a plain sleep loop calling
    :meth:`Timer.tick`, a third of the CPU of a timed event wait per idle poll (ten
    subscriber processes poll a thousand times a second each). A poll callable
    returns False when its topic no longer needs following (no subscriber left, or
    closed); its entry is then cancelled, and the thread ends when no entry is left.
    :meth:`follow` and :meth:`unfollow` must not be called holding a lock a poll takes
    (the topic's lock).
    """

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.timer = Timer(time.monotonic, name=THREAD_NAME)  # ticked by the thread below
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._entries: dict[int, TimerEntry] = {}

    def __len__(self) -> int:
        return len(self.timer)

    @property
    def running(self) -> bool:
        """Whether the polling thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def follow(self, ident: object, poll: Callable[[], bool]) -> None:
        """Call ``poll()`` every :attr:`interval` until it returns False (idempotent)."""
        with self._lock:
            entry = self._entries.get(id(ident))
            if entry is not None and entry.active:
                return
        holder: list[TimerEntry] = []
        entry = self.timer.register(lambda _now: self._poll(holder, poll), self.interval)
        holder.append(entry)
        with self._lock:
            self._entries[id(ident)] = entry
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()

    def unfollow(self, ident: object) -> None:
        """Forget ``ident``, whose poll now returns False (its topic is closed); when
        nothing else is followed, wait (a bounded time) for the thread to end.

        The entry is not cancelled here: the thread holds the timer while it polls,
        and a handler it runs may wait for a lock the caller holds (the store's, in a
        close). The next poll ends it; the bounded wait covers that handler's case.
        """
        with self._lock:
            self._entries.pop(id(ident), None)
            others = any(entry.active for entry in self._entries.values())
            thread = self._thread
        if not others and thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_TIMEOUT)

    def _run(self) -> None:
        while True:
            with self._lock:
                if len(self.timer) == 0:
                    self._thread = None
                    self._entries = {k: e for k, e in self._entries.items() if e.active}
                    return
            # A handler's exit() (SystemExit on this thread, as on a client's receive
            # thread) ends that delivery, never the following of every topic.
            with contextlib.suppress(SystemExit):
                self.timer.tick()
            time.sleep(self.interval)

    @staticmethod
    def _poll(holder: list[TimerEntry], poll: Callable[[], bool]) -> None:
        try:
            keep = poll()
        except SowError:  # closed under the poll: stop following it
            keep = False
        if not keep and holder:
            holder[0].cancel()


#: The process's follower (every read-only store of the process shares its thread).
FOLLOWER = Follower()
