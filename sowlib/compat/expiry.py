"""Expire records while an AMPS program is idle, as an AMPS server does.

An AMPS server removes an expired record (and sends the ``expired`` OOF) when its
time comes, whether or not any client is doing anything. A sowlib topic expires
records when a call reaches it, so a program that publishes a message with an
expiration and then only waits on a subscription would never see it go. The
:class:`ExpirySweeper` of a compat hub runs each topic's
``process_expirations`` on its own :class:`~sowlib.timer.Timer` thread, started
the first time a client uses a topic with expiration enabled and stopped by
:meth:`ExpirySweeper.close` (``sowlib.compat.reset()``). Imports ``errors``,
``timer`` and ``topic``.
"""

from __future__ import annotations

import logging
import threading

from sowlib.errors import SowError
from sowlib.timer import Timer
from sowlib.topic import Topic

__all__ = ["SWEEP_INTERVAL", "ExpirySweeper"]

logger = logging.getLogger(__name__)

#: Seconds between sweeps: how late, at most, an expired OOF reaches an idle program.
SWEEP_INTERVAL = 0.1


class ExpirySweeper:
    """Expire the records of the watched topics every ``interval`` seconds.

    Example:
        >>> from sowlib import SowStore
        >>> store = SowStore()
        >>> topic = store.create_topic("quotes", keys="/id", expiration="enabled")
        >>> sweeper = ExpirySweeper(interval=0.05)
        >>> sweeper.watch(topic)
        >>> sweeper.watching(topic), sweeper.running
        (True, True)
        >>> sweeper.close(); store.close()
    """

    def __init__(self, interval: float = SWEEP_INTERVAL) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._topics: list[Topic] = []
        self._timer: Timer | None = None

    def watch(self, topic: Topic) -> None:
        """Sweep ``topic`` from now on (ignored when its expiration is disabled); idempotent."""
        if not topic.config.expiration_enabled:
            return
        with self._lock:
            if any(t is topic for t in self._topics):
                return
            self._topics.append(topic)
            if self._timer is None:
                self._timer = Timer(name="sowlib-compat-expiry")
                self._timer.register(self.sweep, self.interval)
                self._timer.start()

    def watching(self, topic: Topic) -> bool:
        with self._lock:
            return any(t is topic for t in self._topics)

    @property
    def running(self) -> bool:
        """Whether the sweeping thread is alive."""
        timer = self._timer
        return timer is not None and timer.running

    def sweep(self, now: float | None = None) -> int:
        """Expire what is due in every watched topic; returns how many records expired.

        A topic closed meanwhile is dropped from the watch list; when none is left the
        thread stops (a later :meth:`watch` starts another).
        """
        with self._lock:
            topics = list(self._topics)
        expired = 0
        for topic in topics:
            try:
                if not topic.closed:
                    expired += topic.process_expirations()
                    continue
            except SowError:  # closed between the check and the call
                logger.debug("expiry sweep: topic %r closed", topic.name)
            with self._lock:
                self._topics = [t for t in self._topics if t is not topic]
                idle = not self._topics
                timer, self._timer = (self._timer, None) if idle else (None, self._timer)
            if timer is not None:  # every watched topic is closed: no thread left behind
                timer.stop()
        return expired

    def close(self) -> None:
        """Stop the thread and forget the topics; idempotent."""
        with self._lock:
            timer, self._timer = self._timer, None
            self._topics = []
        if timer is not None:
            timer.stop()
