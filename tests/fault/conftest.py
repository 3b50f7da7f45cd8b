"""Shared pieces of the fault-injection suite: the sample size switch, a small store and its
model, a file system that runs out of space, and a tally of outcomes.

CI runs a seeded sample; ``SOWLIB_FAULT_FULL=1`` runs every case (the nightly size),
``SOWLIB_FAULT_SEED`` changes the sample and ``SOWLIB_FAULT_REPORT=<file>`` appends each
test's tally to that file as a JSON line (the figures in docs/reliability.md).
"""

from __future__ import annotations

import collections
import errno
import json
import mmap
import os
import shutil
from pathlib import Path
from typing import Any

from sowlib import SowStore
from sowlib.storage import AppendLog, FileSystem

FULL = os.environ.get("SOWLIB_FAULT_FULL", "") not in ("", "0")
"""Run every case instead of the CI sample."""
SEED = int(os.environ.get("SOWLIB_FAULT_SEED", "16"))
NOW = 1_700_000_000.0
"""The clock of every store here: expirations stay in the future, results comparable."""

Snapshot = dict[tuple[str, str], tuple[bytes, int, float, float | None]]
"""(topic, sow key) -> (data, seq, timestamp, expiration) of every live record."""


def clock() -> float:
    return NOW


def build_small_store(path: Path) -> None:
    """A closed store with every record shape: PUTs, overwrites, tombstones in the middle and
    last, an expiration, a correlation id, a text key, a batch, a history topic."""
    with SowStore(path, clock=clock, fs=NO_SYNC) as store:
        orders = store.create_topic("orders", keys=["/id"], slab_size=4096, expiration="enabled")
        for i in range(1, 7):
            orders.publish({"id": i, "px": i * 10})
        orders.publish({"id": 2, "px": 21})
        orders.sow_delete_by_keys(orders.key_for({"id": 3}))
        orders.publish({"id": 7, "px": 70}, expiration=3600)
        orders.publish({"id": 8, "px": 80}, correlation_id=b"corr-8")
        orders.sow_delete_by_keys(orders.key_for({"id": 5}))  # a tombstone is the last record
        quotes = store.create_topic("quotes", keys=["/q"], slab_size=4096)
        quotes.publish_many([f'{{"q": {i}}}' for i in range(5)])
        quotes.sow_delete_by_keys(quotes.key_for({"q": 2}))
        quotes.publish('{"q": 5}')
        notes = store.create_topic("notes", slab_size=4096)  # publisher keys: stored as text
        notes.publish('{"n": 1}', sow_key="userKey1")
        notes.publish('{"n": 2}', sow_key="userKey2")
        notes.sow_delete_by_keys("userKey1")
        kept = store.create_topic("kept", keys=["/k"], slab_size=4096, history="1d")
        for v in range(3):  # a history topic replays its whole log, checkpoint or not
            kept.publish({"k": v % 2, "v": v})
        kept.sow_delete_by_keys(kept.key_for({"k": 0}))


def snapshot(store: SowStore) -> Snapshot:
    """Every live record of every topic, with the header fields a flip could change."""
    out: Snapshot = {}
    for topic in store.topics():
        for rec in topic.sow():
            data = rec.data if isinstance(rec.data, bytes) else str(rec.data).encode()
            out[(topic.name, rec.sow_key)] = (data, rec.seq, rec.timestamp, rec.expiration)
    return out


def last_seqs(path: Path) -> dict[str, int]:
    """The last sequence number of every log in a store directory (a reopened writer must
    hand out a higher one)."""
    out = {}
    for log_path in sorted(path.glob("*.sow")):
        with AppendLog(log_path, readonly=True) as log:
            out[log_path.name] = log.last_seq
    return out


def store_files(path: Path) -> dict[str, bytes]:
    """The bytes of every file of a store directory, by name."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def restore(path: Path, files: dict[str, bytes]) -> None:
    """Put a store directory back to exactly ``files``."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    for name, data in files.items():
        (path / name).write_bytes(data)


class NoSync(FileSystem):
    """fsync, msync and directory fsync do nothing: these tests kill processes or damage
    files, never the power, so the page cache is the truth and the suite stays fast."""

    def fsync(self, fd: int) -> None:
        pass

    def msync(self, mm: mmap.mmap, offset: int, size: int) -> None:
        pass

    def fsync_dir(self, directory: str) -> None:
        pass


NO_SYNC = NoSync()


class FullDisk(NoSync):
    """A file system with ``room`` bytes left: reserving or writing past it is ENOSPC.

    ``room=None`` means unlimited; the budget counts every reservation and temp-file write.
    """

    def __init__(self, room: int | None = None) -> None:
        super().__init__()
        self.room = room
        self.refused = 0

    def _spend(self, size: int) -> None:
        if self.room is None:
            return
        if size > self.room:
            self.refused += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= size

    def allocate(self, fd: int, offset: int, length: int) -> None:
        grow = max(0, offset + length - os.fstat(fd).st_size)
        self._spend(grow)
        super().allocate(fd, offset, length)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        self._spend(len(data))
        return super().write(fd, data)


class Tally:
    """Outcome counts of a fault test, printed and optionally appended to the report file."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []

    def add(self, outcome: str, detail: str = "") -> None:
        self.counts[outcome] += 1
        if detail:
            self.failures.append(f"{outcome}: {detail}")

    def report(self, **extra: Any) -> None:
        line = {"test": self.name, "full": FULL, "seed": SEED, **self.counts, **extra}
        print(json.dumps(line))
        target = os.environ.get("SOWLIB_FAULT_REPORT")
        if target:
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")
