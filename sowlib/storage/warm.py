"""Populating a log's memory map in the background after an open.

A store opened on an existing log maps the file, but none of the map's pages is in this
process's page tables yet: the first read of each page is a minor page fault (a few
microseconds), and a query reading a hundred records scattered over the file pays one
per record. :class:`Warmer` asks the kernel, from a daemon thread, to fill the page
tables of the whole written part (``madvise(MADV_POPULATE_READ)``, Linux 5.14 and
later) a chunk at a time, so the open itself takes no longer and queries soon find
their pages mapped. A page not in the page cache is read from disk by that call: on a
file larger than memory, or one not read since the machine started, it is a warm-up
that reads the whole log once, in the background.

[R] Only the map an open (or a compaction) made is populated, once; a writer's growth
maps the file anew every slab and would populate it over and over, so a map replaced
for any reason ends its warmer (its page tables go with it). Where the kernel does not
know the advice (EINVAL: an older kernel, another system) nothing is done, silently.

[R] The C form (``recordread.advise``) releases the GIL during each chunk, so a query
never waits for one; each chunk is called under the warmer's lock, and :meth:`stop`
(the log calls it before it replaces or closes the map) takes that lock and joins the
thread: a map is never unmapped while a chunk populates it, and no thread outlives the
close. (The C form holds no buffer of the map during the system call, so a close never
fails for it; the one close the lock does not order, at interpreter exit, makes the
call fail, not crash.) Without the C extension, ``mmap.madvise`` does the same holding the GIL, in
smaller chunks. Imports only sibling storage modules.
"""

from __future__ import annotations

import errno
import mmap
import os
import sys
import threading
from collections.abc import Callable

from sowlib.storage.native import optional_module

__all__ = ["CHUNK", "MIN_BYTES", "POPULATE_READ", "Advise", "Warmer", "load_native_advise"]

POPULATE_READ = 22
"""Linux's ``MADV_POPULATE_READ`` (the ``mmap`` module has no name for it yet)."""
CHUNK = 4 << 20
"""Bytes populated per call of the C form (about 2 ms of the kernel's time when the
pages are in the page cache; the GIL is released meanwhile)."""
PY_CHUNK = 1 << 20
"""Bytes per call of ``mmap.madvise``, which holds the GIL (well under a millisecond)."""
MIN_BYTES = 1 << 20
"""Maps smaller than this are not populated: their few faults cost less than a thread."""

Advise = Callable[[mmap.mmap, int, int, int], int]
"""``advise(mm, start, length, advice)``: madvise over that part of ``mm``; 0 or the errno."""


def advise_python(mm: mmap.mmap, start: int, length: int, advice: int) -> int:
    """``mmap.madvise`` as an :data:`Advise` (the form without the C extension)."""
    try:
        mm.madvise(advice, start - start % mmap.PAGESIZE, length + start % mmap.PAGESIZE)
    except OSError as exc:
        return exc.errno or errno.EINVAL
    except AttributeError:  # a system without madvise
        return errno.ENOSYS
    return 0


def load_native_advise() -> Advise | None:
    """The C form of :func:`advise_python` (GIL released), or None."""
    module = optional_module("sowlib.storage.recordread")
    advise: Advise | None = getattr(module, "advise", None)
    return advise


class Warmer:
    """A daemon thread populating ``mm[:end]`` once, chunk by chunk, until done or stopped.

    Args:
        mm: the map (the thread holds it until it ends).
        end: the bytes to populate (a log's written end).
        advice: the madvise advice (tests pass an unknown one: the warmer then stops).
        advise: how (default: the C form when built, else :func:`advise_python`).
    """

    def __init__(
        self,
        mm: mmap.mmap,
        end: int,
        advice: int = POPULATE_READ,
        advise: Advise | None = None,
    ) -> None:
        native = load_native_advise() if advise is None else None
        self._advise: Advise = advise or native or advise_python
        self._chunk = CHUNK if advise is None and native is not None else PY_CHUNK
        self._mm: mmap.mmap | None = mm
        self._end = min(end, len(mm))
        self._advice = advice
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.done = 0
        """Bytes populated so far."""
        self.error = 0
        """The errno that ended the warmer early (EINVAL: the kernel lacks the advice)."""
        self._thread = threading.Thread(target=self._run, name="sowlib-warm", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, mm: mmap.mmap | None, end: int) -> Warmer | None:
        """A warmer of ``mm[:end]``, or None when there is nothing worth populating."""
        if mm is None or min(end, len(mm)) < MIN_BYTES:
            return None
        return cls(mm, end, POPULATE_READ)

    @property
    def alive(self) -> bool:
        """Whether the thread is still running."""
        return self._thread.is_alive()

    def join(self) -> None:
        """Wait until the whole map is populated (or the warmer stopped)."""
        self._thread.join()

    def _run(self) -> None:
        off, end, chunk = 0, self._end, self._chunk
        while off < end:
            with self._lock:
                mm = self._mm
                if mm is None:
                    return
                try:
                    err = self._advise(mm, off, min(chunk, end - off), self._advice)
                except (ValueError, BufferError):  # closed under a collection in this thread
                    err = errno.EBADF
                if err:
                    self.error, self._mm = err, None
                    return
            off += chunk
            self.done = min(off, end)
        with self._lock:
            self._mm = None

    def stop(self) -> None:
        """End the thread (after the chunk in flight) and drop the map; idempotent.

        Called before the map is replaced or closed. From the warmer's own thread (a
        garbage collection running there closed the log) it only marks the map dropped:
        the next call sees that, and a closed map makes a call fail, never crash.
        """
        thread = self._thread
        if thread.ident == threading.get_ident() or os.getpid() != self._pid:
            self._mm = None  # the thread itself, or a forked child (no thread, maybe a held lock)
            return
        if sys.is_finalizing():
            # The interpreter is exiting (a log never closed): a daemon thread that wants
            # the GIL back now ends where it is, its lock held; waiting for it would hang.
            # A chunk still in the kernel fails if the map goes (ENOMEM), nothing more.
            self._mm = None
            return
        with self._lock:
            self._mm = None
        thread.join()
