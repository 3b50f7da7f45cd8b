"""Crash tests at the topic level: SIGKILL a writer mid-stream, reopen, check the prefix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sowlib import SowStore

WRITER = textwrap.dedent(
    """
    import sys
    from sowlib import SowStore
    store = SowStore(sys.argv[1])
    t = store.create_topic("t", keys=["/id"], slab_size="64KB")
    i = 0
    while True:
        r = t.publish({"id": i % 500, "n": i, "pad": "z" * (i % 97)})
        print(i, r.seq, flush=True)
        i += 1
    """
)


@pytest.mark.slow
def test_sigkill_mid_stream_keeps_every_acknowledged_publish(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout is not None
    acked: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30
    while len(acked) < 3000 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        count, seq = line.split()
        acked.append((int(count), int(seq)))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert len(acked) >= 1000
    with SowStore(store_dir) as store:
        t = store.topic("t")
        t.check()
        last_n: dict[int, int] = {}
        for count_, _seq in acked:
            last_n[count_ % 500] = count_
        for key_id, last in last_n.items():
            rec = t.get(t.key_for({"id": key_id}))
            assert rec is not None
            # the stored version is the last acknowledged one or a later unacknowledged one
            assert rec.doc["n"] >= last
            assert rec.doc["n"] % 500 == key_id
        after = t.publish({"id": 1, "n": -1})
    with SowStore(store_dir) as store:
        t = store.topic("t")
        rec = t.get(after.sow_key)
        assert rec is not None
        assert rec.doc["n"] == -1


def test_torn_tail_at_every_offset_of_the_last_record(tmp_path: Path) -> None:
    src = tmp_path / "src"
    with SowStore(src) as store:
        t = store.create_topic("t", keys=["/id"])
        for i in range(5):
            t.publish({"id": i, "v": i})
        path = Path(t.path)
        start = t.stats()["used_bytes"]  # the log's end offset
        t.publish({"id": 99, "v": "last"})
        end = t.stats()["used_bytes"]
        # The image a kill leaves: read before close, nothing committed yet (after a clean
        # close a damaged last record is corruption, see tests/storage).
        pristine = path.read_bytes()
    os.remove(str(path) + ".ckpt") if os.path.exists(str(path) + ".ckpt") else None
    for cut in range(start + 1, end):
        damaged = bytearray(pristine)
        damaged[cut:end] = b"\x00" * (end - cut)
        path.write_bytes(bytes(damaged))
        with SowStore(src) as store:
            t = store.topic("t")
            assert len(t) == 5, cut
            t.check()
            t.publish({"id": 7})
        with SowStore(src) as store:
            assert len(store.topic("t")) == 6
        path.write_bytes(pristine)
        ckpt = Path(str(path) + ".ckpt")
        if ckpt.exists():
            ckpt.unlink()
