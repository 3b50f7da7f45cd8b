"""What a read-only store's look at its directories tells the logs of its topic files.

A read-only store looks at its directories at the start of each ``refresh`` (one
``stat`` each, ``sowlib.store_files.TopicFiles``). A file of a directory whose
modification time has not changed since a walk that found it settled (older than the
file system's clock can blur) cannot have been replaced or removed since then: a
rename or an unlink in a directory changes its time. So a log whose last look at its
path came after that walk, finding nothing new in its map, need not look at the path
again while the store's refresh runs (:meth:`DirectoryLooks.unchanged_since`).
Imports only the standard library.
"""

from __future__ import annotations

import threading

__all__ = ["DirectoryLooks"]


class DirectoryLooks:
    """The store's side: :meth:`settled` after each walk, :meth:`begin` / :meth:`end`
    around the topics' refreshes when the directories were found unchanged. The log's
    side: :attr:`epoch` read before it looks at its path, :meth:`unchanged_since` with
    what it read then."""

    __slots__ = ("_current", "epoch")

    def __init__(self) -> None:
        #: A new object after each walk that found the directories settled, None while
        #: they are not: a look at a file taken after reading an epoch is covered by it.
        self.epoch: object | None = None
        # (thread, epoch) while a refresh that found the directories unchanged runs.
        self._current: tuple[int, object] | None = None

    def settled(self, quiet: bool) -> None:
        """A walk ended; ``quiet``: its directories' times were settled before it."""
        self.epoch = object() if quiet else None

    def begin(self) -> None:
        """The directories were just found unchanged since the walk of :attr:`epoch`:
        until :meth:`end`, this thread's logs may rely on it."""
        epoch = self.epoch
        self._current = None if epoch is None else (threading.get_ident(), epoch)

    def end(self) -> None:
        """The refresh that called :meth:`begin` is over."""
        self._current = None

    def unchanged_since(self, epoch: object | None) -> bool:
        """Whether a file looked at after reading ``epoch`` is still the one at its path,
        by the look this thread's running refresh took (False outside one)."""
        current = self._current
        return (
            current is not None
            and epoch is not None
            and current[1] is epoch
            and current[0] == threading.get_ident()
        )
