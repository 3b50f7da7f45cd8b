"""Following: what a topic does for those who follow its writes.

A read-only topic with subscribers is polled by the process's follower thread
(:data:`sowlib.topic.follow.FOLLOWER`), which turns the writer's new records into
subscription events; a write listener (a view's feed) gets every live record, then
every write. :class:`~sowlib.topic.facade.Topic` inherits :class:`Following`.
Imports the topic's ``follow`` module only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from sowlib.topic.derivedwrite import DerivedWrites
from sowlib.topic.follow import FOLLOWER
from sowlib.topic.parts import Parts

__all__ = ["Following"]


class Following(DerivedWrites):
    """The following half of :class:`~sowlib.topic.facade.Topic` (its attributes are
    set by the Topic's constructor)."""

    _p: Parts
    _lock: threading.RLock
    _closed: bool
    _readonly: bool
    _reopen: Any
    refresh: Callable[[], int]  # the Topic's
    _check_open: Callable[[], None]  # sowlib.topic.keyreads.KeyReads
    _tick: Callable[[], None]  # sowlib.topic.keyreads.KeyReads
    _point_fronts: Callable[[], None]  # sowlib.topic.keyreads.KeyReads

    #: A topic written lazily (a view's): brings it up to date before an operation
    #: reads it (see :meth:`defer_writes`); called by ``_tick`` and ``_catch_up``.
    _materialize: Callable[[], None] | None = None
    #: How many write listeners follow the topic (see :meth:`follow`).
    _followed = 0

    def defer_writes(self, materialize: Callable[[], None]) -> threading.RLock:
        """Have ``materialize()`` called, under the topic's lock, before every operation
        on the topic (queries, reads by key, counts, subscriptions, writes).

        For a derived topic whose writer holds its changes until someone looks: the
        writer writes them in ``materialize``, and at once while :attr:`observed`.
        Returns the topic's lock, which that writer holds while it changes its state
        (so a reader waits for a write in progress). By-key reads then take the lock.
        """
        with self._lock:
            self._materialize = materialize
            self._point_fronts()  # by-key reads now take the Python path
        return self._lock

    @property
    def observed(self) -> bool:
        """Whether a subscription or a write listener sees each change as it is written."""
        return self._followed > 0 or self._p.subs.active

    def _catch_up(self) -> None:
        """Read-only: apply the writer's changes before a subscription starts (lock held).
        A lazily written topic is brought up to date first."""
        if self._materialize is not None:
            self._materialize()
        if self._readonly and self._reopen is not None:
            self.refresh()

    def _follow(self) -> None:
        """Read-only: poll the log while subscribed (never called holding the lock)."""
        if self._readonly and self._reopen is not None:
            path = getattr(self._p.log, "path", None)  # the writer rings its directory's bell
            watch = os.path.dirname(os.path.abspath(path)) if isinstance(path, str) else None
            FOLLOWER.follow(self, self._poll, watch, bell=True)

    def _poll(self) -> bool:
        with self._lock:
            if self._closed or not self._p.subs.active:
                return False
            self.refresh()
            return True

    def follow(self, listener: Any) -> Callable[[], None]:
        """Feed ``listener`` (a :class:`~sowlib.index.WriteListener`) every live record's
        values of its paths (``put_many``, a batch at a time), then every write, as the
        index upkeep sees it (:meth:`~sowlib.index.IndexSet.follow`); returns what stops it."""
        with self._lock:
            self._check_open()
            self._tick()
            self._p.indexes.settle()
            for keys, columns in self._p.source.field_chunks(listener.paths):
                listener.put_many(keys, columns)
            self._p.indexes.follow(listener)
            self._followed += 1

        def stop() -> None:
            with self._lock:
                self._p.indexes.follow(listener, on=False)
                self._followed -= 1

        return stop
