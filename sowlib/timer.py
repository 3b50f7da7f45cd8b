"""A store's timer: callbacks run every ``interval`` seconds on one thread, or on ``tick()``.

Conflation intervals use it; so can expiration sweeps and heartbeats. Imports only
``errors``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sowlib.errors import ArgumentError

__all__ = ["Timer", "TimerEntry"]

logger = logging.getLogger("sowlib.timer")

#: The longest the thread sleeps before looking at the clock again (an injected clock
#: may jump; a registration may arrive).
MAX_SLEEP = 0.5


class TimerEntry:
    """One registered callback; :meth:`cancel` stops it (idempotent)."""

    def __init__(
        self, timer: Timer, callback: Callable[[float], object], interval: float, due: float
    ) -> None:
        self.callback = callback
        self.interval = interval
        self.due = due
        self.runs = 0
        self.errors = 0
        self._timer: Timer | None = timer

    @property
    def active(self) -> bool:
        """False once cancelled (or the timer stopped)."""
        return self._timer is not None

    def cancel(self) -> None:
        """Never run the callback again."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.discard(self)


class Timer:
    """Periodic callbacks, due by ``clock``; run by :meth:`tick` or by a thread.

    A callback gets the clock reading it runs at; it never runs twice at once, and
    an exception from it is logged and counted on its entry (the timer keeps going).
    A late run does not queue the missed ones: the next is due one interval later.

    Example:
        >>> t = Timer(clock=lambda: 100.0)
        >>> entry = t.register(print, 5)
        >>> t.tick(now=105.0)
        105.0
        1
    """

    def __init__(self, clock: Callable[[], float] = time.time, name: str = "sowlib-timer") -> None:
        self.clock = clock
        self.name = name
        self._entries: list[TimerEntry] = []
        self._lock = threading.RLock()  # one run at a time: tick() and the thread agree
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def register(self, callback: Callable[[float], object], interval: float) -> TimerEntry:
        """Run ``callback(now)`` every ``interval`` seconds from now; O(1).

        Raises:
            ArgumentError: an interval that is not a positive number.
        """
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise ArgumentError("interval", interval, "a positive number of seconds")
        with self._lock:
            entry = TimerEntry(self, callback, float(interval), self.clock() + interval)
            self._entries.append(entry)
        self._wake.set()
        return entry

    def discard(self, entry: TimerEntry) -> None:
        """Forget ``entry`` (what :meth:`TimerEntry.cancel` calls)."""
        with self._lock:
            self._entries = [e for e in self._entries if e is not entry]

    def __len__(self) -> int:
        return len(self._entries)

    def tick(self, now: float | None = None) -> int:
        """Run every callback that is due at ``now`` (default: the clock); returns how many."""
        with self._lock:
            now = self.clock() if now is None else now
            ran = 0
            for entry in list(self._entries):
                if entry.active and entry.due <= now:
                    entry.due = max(entry.due + entry.interval, now)
                    ran += 1
                    entry.runs += 1
                    try:
                        entry.callback(now)
                    except Exception:  # one failing callback must not stop the others
                        entry.errors += 1
                        logger.exception("timer %s: callback %r raised", self.name, entry.callback)
            return ran

    def next_due(self) -> float | None:
        """When the next callback is due (None: nothing registered)."""
        with self._lock:
            return min((e.due for e in self._entries), default=None)

    def start(self) -> None:
        """Start the thread (a daemon); idempotent, a no-op once stopped."""
        with self._lock:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop the thread and cancel every entry; idempotent."""
        with self._lock:
            self._stopped = True
            thread, self._thread = self._thread, None
            for entry in list(self._entries):
                entry.cancel()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while not self._stopped:
            due = self.next_due()
            wait = MAX_SLEEP if due is None else min(MAX_SLEEP, max(0.0, due - self.clock()))
            if wait > 0 and self._wake.wait(wait):
                self._wake.clear()
                continue
            if not self._stopped:
                self.tick()
