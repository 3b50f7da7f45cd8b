"""A queue's durable state beside its transaction log: where it starts and what left it.

One small append-only text file per queue in ``<journal directory>/queues/``: a
header line with the sequence number the queue starts after, then one line per
message removed (``a`` acknowledged or delivered at most once, ``x`` expired).
A torn last line (a crash mid-write) is ignored. Imports ``errors`` only.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse

from sowlib.errors import CorruptRecordError, StorePathError

__all__ = ["AckLog"]

_HEADER = "sowlib-queue 1 start="


def state_path(directory: str, name: str, message_type: str) -> str:
    """The state file of queue ``name`` (any name maps to a safe file name)."""
    digest = hashlib.sha256(f"{name}\0{message_type}".encode()).hexdigest()[:12]
    safe = urllib.parse.quote(name, safe="")[:80]
    return os.path.join(directory, "queues", f"{safe}.{message_type}.{digest}.acks")


class AckLog:
    """The start position and the removed sequence numbers of one queue.

    Args:
        path: the state file (created with ``start`` when missing).
        start: the sequence number a new queue starts after.
        sync: fsync every line.
    Raises:
        CorruptRecordError: a damaged file.
        StorePathError: the OS refused the file.
    """

    def __init__(self, path: str, start: int, *, sync: bool = False) -> None:
        self.path = path
        self.sync = sync
        self.removed: dict[int, str] = {}
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, encoding="ascii") as fh:
                text = fh.read()
        except FileNotFoundError:
            self.start = start
            self._rewrite()
            return
        except (OSError, UnicodeDecodeError) as exc:
            raise StorePathError(path, "read the queue state", str(exc)) from None
        lines = text.split("\n")
        if not lines[0].startswith(_HEADER) or not lines[0][len(_HEADER) :].isdigit():
            raise CorruptRecordError(path, 0, "not a sowlib queue state file")
        self.start = int(lines[0][len(_HEADER) :])
        for number, line in enumerate(lines[1:-1], 2):  # the last piece: "" or torn
            kind, _, seq = line.partition(" ")
            if kind not in ("a", "x") or not seq.isdigit():
                raise CorruptRecordError(path, number, f"bad queue state line {line!r}")
            self.removed[int(seq)] = kind

    def remove(self, seq: int, kind: str) -> None:
        """Record that message ``seq`` left the queue (``a`` consumed, ``x`` expired)."""
        self.removed[seq] = kind
        self._append(f"{kind} {seq}\n")

    def compact(self, floor: int) -> None:
        """Forget removals at or below ``floor`` (every message up to it is gone) and
        start after it; rewrites the file atomically."""
        if floor <= self.start:
            return
        self.start = floor
        self.removed = {s: k for s, k in self.removed.items() if s > floor}
        self._rewrite()

    def _append(self, line: str) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("ascii"))
                if self.sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorePathError(self.path, "write the queue state", str(exc)) from None

    def _rewrite(self) -> None:
        body = "".join(f"{k} {s}\n" for s, k in sorted(self.removed.items()))
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="ascii") as fh:
                fh.write(f"{_HEADER}{self.start}\n{body}")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise StorePathError(self.path, "write the queue state", str(exc)) from None
