"""SIGKILL a writer at random points: mid-batch, mid-compaction, mid-checkpoint, mid-growth.

A forked child publishes large ``publish_many`` batches, deletes, compacts and closes and
reopens the store (writing checkpoints), acknowledging each step on a pipe. It is killed
either by a timer or by itself at the n-th call of one ``FileSystem`` step (a reservation, a
temp-file write, an fsync, a rename), which lands kills inside compactions and checkpoint
writes. After every kill a read-only and a writer ``SowStore`` must open, and every key must
hold the state of the last acknowledged step or of the step in flight: 0 acknowledged
records lost, 0 resurrected deletes, 0 stores that fail to open. ``SOWLIB_FAULT_FULL=1``
runs the nightly number of kills.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.errors import SowError
from sowlib.storage import FileSystem

from .conftest import FULL, NO_SYNC, SEED, NoSync, Tally

pytestmark = [pytest.mark.fault, pytest.mark.slow]

KILLS = 300 if FULL else 12
"""Kills per run of the test."""
BATCH = 4000 if FULL else 1500
"""Messages per ``publish_many`` (large: the batch spans slabs)."""
IDS = BATCH
STEPS = ("fsync", "rename", "write", "allocate", "fsync_dir", "timer")


class KillAt(NoSync):
    """Kills its own process at the ``at``-th call of ``step``."""

    def __init__(self, step: str, at: int) -> None:
        super().__init__()
        self.step, self.at, self.calls = step, at, 0

    def _tick(self, step: str) -> None:
        if step == self.step:
            self.calls += 1
            if self.calls == self.at:
                os.kill(os.getpid(), signal.SIGKILL)

    def fsync(self, fd: int) -> None:
        self._tick("fsync")
        super().fsync(fd)

    def rename(self, src: str, dst: str) -> None:
        self._tick("rename")
        super().rename(src, dst)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        self._tick("write")
        return super().write(fd, data)

    def allocate(self, fd: int, offset: int, length: int) -> None:
        self._tick("allocate")
        super().allocate(fd, offset, length)

    def fsync_dir(self, directory: str) -> None:
        self._tick("fsync_dir")
        super().fsync_dir(directory)


def state_after(step: int) -> dict[int, int | None]:
    """The value (batch number, None: deleted) of every id after data step ``step``.

    Step ``2b`` publishes every id with value ``b``; step ``2b + 1`` deletes the ids with
    ``(id + b) % 7 == 0``. Step -1 is the empty store.
    """
    if step < 0:
        return dict.fromkeys(range(IDS))
    b, deletes = divmod(step, 2)
    return {i: None if deletes and (i + b) % 7 == 0 else b for i in range(IDS)}


def _open(path: Path, fs: FileSystem) -> tuple[SowStore, Any]:
    store = SowStore(path, fs=fs)
    names = [t.name for t in store.topics()]
    if "t" in names:
        return store, store.topic("t")
    return store, store.create_topic("t", keys=["/id"], slab_size="128KB")


def _child(path: Path, first: int, steps: int, fs: FileSystem, out: int) -> None:
    store, topic = _open(path, fs)
    for step in range(first, first + steps):
        b, deletes = divmod(step, 2)
        if deletes:
            ids = [i for i in range(IDS) if (i + b) % 7 == 0]
            topic.sow_delete_by_keys([topic.key_for({"id": i}) for i in ids])
        else:
            topic.publish_many([{"id": i, "b": b, "pad": "x" * (i % 23)} for i in range(IDS)])
        os.write(out, f"{step}\n".encode())
        if deletes and b % 3 == 1:
            topic.compact()
        if deletes and b % 4 == 2:
            store.close()  # writes the checkpoint; the reopen reads it
            store, topic = _open(path, fs)
    store.close()


def _run_child(path: Path, first: int, step: str, at: int, delay: float) -> list[int]:
    """Fork a writer, kill it, return the steps it acknowledged."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test runner
        try:
            os.close(read_fd)
            fs = NO_SYNC if step == "timer" else KillAt(step, at)
            _child(path, first, 16, fs, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    deadline = time.monotonic() + delay if step == "timer" else None
    data = b""
    try:
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], timeout)
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = None
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return [int(line) for line in data.split()]


def _values(topic: Any) -> dict[int, int]:
    return {rec.doc["id"]: rec.doc["b"] for rec in topic.sow()}


def test_issue16_sigkill_anywhere_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "store"
    acked = -1
    tally = Tally("SIGKILL")
    for kill in range(KILLS):
        step = STEPS[kill % len(STEPS)]
        at = rng.randint(1, 6)
        acks = _run_child(path, acked + 1, step, at, rng.uniform(0.05, 1.5))
        assert acks == list(range(acked + 1, acked + 1 + len(acks)))
        acked += len(acks)
        tally.add(f"kill at {step}")
        allowed = (state_after(acked), state_after(acked + 1))
        if not path.exists():
            continue  # killed before the store directory existed
        try:
            with SowStore(path, readonly=True, fs=NO_SYNC) as reader:
                names = [t.name for t in reader.topics()]
                got = _values(reader.topic("t")) if "t" in names else {}
            with SowStore(path, fs=NO_SYNC) as writer:
                names = [t.name for t in writer.topics()]
                if "t" in names:
                    writer.topic("t").check()
                    assert _values(writer.topic("t")) == got
        except SowError as exc:
            tally.add("failed to open", f"kill {kill} at {step} #{at}: {exc!r}")
            break
        for i in range(IDS):
            value = got.get(i)
            if value not in (allowed[0][i], allowed[1][i]):
                lost = allowed[0][i] is not None and value is None
                kind = "lost" if lost else "resurrected" if value is not None else "wrong"
                tally.add(kind, f"kill {kill} at {step} #{at}: id {i} = {value}, {allowed}")
    tally.report(kills=KILLS, acknowledged_steps=acked + 1, batch=BATCH)
    assert not tally.failures, tally.failures[:10]
    assert acked > KILLS // 2  # the kills landed mid-run, not before the first step
