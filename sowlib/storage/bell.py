"""A doorbell beside a store's log files: how a read-only process learns of new data at once.

The writer writes its logs through a memory map, which the kernel's file-change
notification (Linux inotify) does not report. So a writer process rings a bell
after an append: one byte written to ``.sowlib-bell`` in the log's directory, which
every process watching that directory is told about (:class:`Watcher`). It rings
only while some reader listens (a reader writes the time into ``.sowlib-listen``
every second while it follows, :func:`listen`; watchers ignore that file), and at
most once per
:data:`RING_GAP` seconds: a reader woken by a ring keeps polling quickly for a while
(:mod:`sowlib.topic.follow`), so a burst costs one write. Where inotify is missing
(not Linux), :class:`Watcher` says so and readers poll as before.
Imports only the standard library.
"""

from __future__ import annotations

import ctypes
import math
import os
import select
import struct
import time

__all__ = ["BELL_NAME", "LISTEN_NAME", "LISTEN_TTL", "RING_GAP", "Bell", "Watcher", "listen"]

BELL_NAME = ".sowlib-bell"
LISTEN_NAME = ".sowlib-listen"
#: A reader's mark older than this many seconds no longer makes the writer ring.
LISTEN_TTL = 4.0
#: The writer rings at most once per this many seconds (0: after every append, so a
#: reader never needs to poll for the end of a burst).
RING_GAP = 0.0
#: How often (seconds) the writer looks at the readers' mark.
CHECK_EVERY = 0.25
_STAMP = struct.Struct("<d")
_LISTEN_BYTES = LISTEN_NAME.encode()
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
_IN_MODIFY, _IN_CREATE, _IN_MOVED_TO = 0x2, 0x100, 0x80
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
#: One read of the events: room for at least 15 of the longest (a read returns whole
#: events only, so one that leaves room for another has drained them all).
_READ_SIZE = 4096
_EVENT_MAX = _EVENT.size + 256  # the header and the longest name (NAME_MAX + 1)


class Bell:
    """The writer's end of the bell of ``directory``; :meth:`ring` after an append.

    A writer with no reader writes nothing (it looks for a reader's mark at most every
    :data:`CHECK_EVERY` seconds). A bell that cannot be written (a full disk) stays
    silent, and readers notice new data by polling, as without it.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.rings = 0
        self._fd = -1
        self._quiet_until = 0.0
        self._check_at = 0.0
        self._listening = False

    def ring(self) -> None:
        """Tell watching readers that the log grew (a write only if one listens)."""
        now = time.monotonic()
        if now < self._quiet_until:
            return
        self._quiet_until = now + RING_GAP
        if now >= self._check_at:
            self._check_at = now + CHECK_EVERY
            self._listening = self._listened_to()
        if self._listening:
            try:
                os.pwrite(self._fd, b"\x01", 0)
                self.rings += 1
            except OSError:  # a full disk: the bell falls silent, readers poll
                self._listening = False

    def _listened_to(self) -> bool:
        """Whether a reader marked the directory within :data:`LISTEN_TTL` seconds."""
        if _mark_age(self.directory) > LISTEN_TTL:
            return False
        if self._fd < 0:
            flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            try:
                self._fd = os.open(os.path.join(self.directory, BELL_NAME), flags, 0o644)
            except OSError:  # the directory is gone or full: silent
                return False
        return True

    def close(self) -> None:
        """Release the file; idempotent."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def _mark_age(directory: str) -> float:
    """Seconds since a reader last marked ``directory`` (infinite: never)."""
    try:
        fd = os.open(os.path.join(directory, LISTEN_NAME), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return math.inf
    try:
        mark = os.pread(fd, _STAMP.size, 0)
    finally:
        os.close(fd)
    if len(mark) != _STAMP.size:
        return math.inf
    return float(time.time() - _STAMP.unpack(mark)[0])


def listen(directory: str) -> bool:
    """Mark ``directory`` as listened to now (its writer rings for :data:`LISTEN_TTL`
    seconds); a fresh mark is left as it is. False when it cannot be written."""
    if _mark_age(directory) < LISTEN_TTL / 2:
        return True
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(os.path.join(directory, LISTEN_NAME), flags, 0o644)
    except OSError:  # a directory this process may not write to: it polls
        return False
    try:
        os.pwrite(fd, _STAMP.pack(time.time()), 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class Watcher:
    """Waits until something in one of the watched directories changes (inotify).

    :attr:`available` is False where inotify is not, or when not ``enabled`` (then
    :meth:`wait` only sleeps).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.available = False
        self._fd = -1
        self._watched: dict[str, int] = {}
        self._add = None
        if not enabled:
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # the C library the process runs on
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError, TypeError):  # no C library with inotify
            return
        add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        add.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return
        self._fd, self._add, self.available = fd, add, True
        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)

    def watch(self, directory: str) -> bool:
        """Watch ``directory`` (idempotent); False when it cannot be watched."""
        if not self.available or self._add is None:
            return False
        if directory in self._watched:
            return True
        mask = _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO
        wd = self._add(self._fd, os.fsencode(directory), mask)
        if wd < 0:
            return False
        self._watched[directory] = wd
        return True

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a change; True when one came (the events
        are drained)."""
        if not self.available:
            time.sleep(timeout)
            return False
        if not self._poller.poll(max(0, math.ceil(timeout * 1000))):
            return False
        changed = False
        while True:  # one read holds every event but after a burst of changes
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                break
            pos = 0
            while pos + _EVENT.size <= len(data):
                size = _EVENT.unpack_from(data, pos)[3]
                name = data[pos + _EVENT.size : pos + _EVENT.size + size].rstrip(b"\0")
                changed = changed or name != _LISTEN_BYTES
                pos += _EVENT.size + size
            if len(data) + _EVENT_MAX <= _READ_SIZE:  # room for another event was left
                break
        return changed

    def close(self) -> None:
        """Release the inotify descriptor; idempotent."""
        fd, self._fd = self._fd, -1
        self.available = False
        if fd >= 0:
            os.close(fd)
