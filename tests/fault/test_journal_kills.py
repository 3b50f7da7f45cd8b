"""SIGKILL a journalled writer: mid-publish, mid-refill, mid-roll, mid-commit.

A forked child runs a store whose topic ``t`` a :class:`Journal` with small files
records: ``publish_many`` batches (each message journalled as the SOW takes it),
deletes, close/reopen cycles, and every few steps the SOW file is removed so that the
next open refills the topic from the journal. Each step is acknowledged on a pipe with
the journal's last sequence number. The child is killed by a timer or by itself at the
n-th journal write, fsync (commit marks and seals) or rename (state file: sequence
reservations, refill markers), or at the n-th SOW reservation (inside batches and
refills). After every kill the parent opens both, the journal reconciles the topic, and:

- the SOW holds exactly the journal's replay of ``t``;
- every id holds the state of the last acknowledged step or of the one in flight (0
  acknowledged entries lost, 0 resurrected deletes);
- every entry seen after an earlier kill is still there, unchanged, and the next entry's
  sequence number is above every acknowledged one (0 reused sequence numbers).
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
from sowlib.journal import Entry, Journal
from sowlib.storage import FileSystem

from .conftest import FULL, NO_SYNC, SEED, NoSync, Tally

pytestmark = [pytest.mark.fault, pytest.mark.slow]

KILLS = 120 if FULL else 12
IDS = 300
STEPS = ("write", "fsync", "rename", "allocate", "timer", "timer")


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

    def rename(self, src: str, dst: str) -> None:
        self._tick("rename")
        super().rename(src, dst)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        self._tick("write")
        return super().write(fd, data)

    def allocate(self, fd: int, offset: int, length: int) -> None:
        self._tick("allocate")
        super().allocate(fd, offset, length)


def state_after(step: int) -> dict[int, int | None]:
    """Step ``2b`` publishes every id with value ``b``; step ``2b + 1`` deletes the ids
    with ``(id + b) % 5 == 0``. Step -1 is the empty topic."""
    if step < 0:
        return dict.fromkeys(range(IDS))
    b, deletes = divmod(step, 2)
    return {i: None if deletes and (i + b) % 5 == 0 else b for i in range(IDS)}


def _open(path: Path, store_fs: FileSystem, journal_fs: FileSystem) -> tuple[Any, Any, Any]:
    store = SowStore(path / "sow", fs=store_fs)
    if "t" in [t.name for t in store.topics()]:
        topic = store.topic("t")
    else:
        topic = store.create_topic("t", keys=["/id"], slab_size="64KB")
    journal = Journal(path / "journal", ["t", "probe"], file_size="24KB", fs=journal_fs)
    journal.watch(store)  # reconciles or refills the topic
    return store, topic, journal


def _drop_sow_file(store: Any, topic: Any) -> None:
    log = Path(str(topic.stats()["path"]))
    store.close()
    for extra in [log, *log.parent.glob(log.name + ".*")]:
        extra.unlink()


def _child(path: Path, first: int, steps: int, fs: FileSystem, kill_store: bool, out: int) -> None:
    store_fs, journal_fs = (fs, NO_SYNC) if kill_store else (NO_SYNC, fs)
    store, topic, journal = _open(path, store_fs, journal_fs)
    for step in range(first, first + steps):
        b, deletes = divmod(step, 2)
        if deletes:
            ids = [i for i in range(IDS) if (i + b) % 5 == 0]
            topic.sow_delete_by_keys([topic.key_for({"id": i}) for i in ids])
        else:
            topic.publish_many([{"id": i, "b": b, "pad": "x" * (i % 17)} for i in range(IDS)])
        mark = journal.last_bookmark()  # "<id>|<seq>|", or "0" when empty
        os.write(out, f"{step} {mark.split('|')[1] if '|' in mark else 0}\n".encode())
        if step % 5 == 3:
            journal.close()
            if step % 10 == 8:
                _drop_sow_file(store, topic)  # the next open refills from the journal
                os.write(out, b"refill\n")
            else:
                store.close()
            store, topic, journal = _open(path, store_fs, journal_fs)
            os.write(out, b"opened\n")
    journal.close()
    store.close()


def _run_child(
    path: Path, first: int, step: str, at: int, delay: float
) -> tuple[list[tuple[int, int]], bool]:
    """Fork a writer, kill it; the steps it acknowledged with their last seq, and whether
    it died during a refill."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test runner
        try:
            os.close(read_fd)
            fs = NO_SYNC if step == "timer" else KillAt(step, at)
            _child(path, first, 12, fs, step == "allocate", write_fd)
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
    lines = data.decode().splitlines()
    acks = [line.split(maxsplit=1) for line in lines if " " in line]
    refilling = bool(lines) and lines[-1] == "refill"
    return [(int(step), int(seq)) for step, seq in acks], refilling


def replay_state(entries: list[Entry]) -> dict[str, bytes]:
    state: dict[str, bytes] = {}
    for entry in entries:
        if entry.topic != "t":
            continue
        if entry.kind == "publish":
            state[entry.sow_key] = entry.data
        else:
            state.pop(entry.sow_key, None)
    return state


def test_sigkill_of_a_journalled_writer_loses_nothing_and_sow_equals_the_journal(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    acked = top_acked = -1
    seen: dict[int, Entry] = {}
    tally = Tally("journal SIGKILL")
    for kill in range(KILLS):
        step = STEPS[kill % len(STEPS)]
        at = rng.randint(1, 400) if step == "write" else rng.randint(1, 8)
        acks, refilling = _run_child(tmp_path, acked + 1, step, at, rng.uniform(0.05, 1.5))
        assert [a for a, _ in acks] == list(range(acked + 1, acked + 1 + len(acks)))
        acked += len(acks)
        top_acked = max([top_acked, *(seq for _, seq in acks)])
        tally.add(f"kill at {step}")
        if refilling:
            tally.add("killed during a refill")
        where = f"kill {kill} at {step} #{at}"
        try:
            store, topic, journal = _open(tmp_path, NO_SYNC, NO_SYNC)
            entries = list(journal.replay())
            sow = {rec.sow_key: rec.data for rec in topic.sow()}
            values = {rec.doc["id"]: rec.doc["b"] for rec in topic.sow()}
            topic.check()
            probe = journal.record("publish", "probe", "json", b"{}").seq
            journal.close()
            store.close()
        except SowError as exc:
            tally.add("failed to open", f"{where}: {exc!r}")
            break
        journalled = replay_state(entries)
        if {
            k: v if isinstance(v, bytes) else str(v).encode() for k, v in sow.items()
        } != journalled:
            tally.add("SOW differs from the journal", where)
        allowed = (state_after(acked), state_after(acked + 1))
        for i in range(IDS):
            value = values.get(i)
            if value not in (allowed[0][i], allowed[1][i]):
                lost = allowed[0][i] is not None and value is None
                kind = "lost" if lost else "resurrected" if value is not None else "wrong"
                tally.add(kind, f"{where}: id {i} = {value}, {allowed[0][i]}/{allowed[1][i]}")
        seqs = [e.seq for e in entries]
        if seqs != sorted(set(seqs)):
            tally.add("seq out of order", where)
        if probe <= max([top_acked, *seqs]):
            tally.add("seq reused", f"{where}: next {probe}, acknowledged up to {top_acked}")
        now = {e.seq: e for e in entries}
        if any(now.get(seq) != entry for seq, entry in seen.items()):
            tally.add("entry lost or seq reused", where)
        seen = now
        top_acked = probe
    tally.report(kills=KILLS, acknowledged_steps=acked + 1, ids=IDS)
    assert not tally.failures, tally.failures[:10]
    assert acked > KILLS // 2
