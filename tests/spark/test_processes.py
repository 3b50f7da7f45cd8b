"""A writer process publishing and compacting while a reader process refreshes in a loop.

The reader must never see a partial record, never see a key go back in time, and end
with exactly the writer's final state. Plain processes, no Spark: this is what
Spark's Python workers do with a store the driver writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WRITER = textwrap.dedent(
    """
    import json, sys
    from sowlib.store import SowStore

    path, done = sys.argv[1], sys.argv[2]
    with SowStore(path) as store:
        topic = store.create_topic("ticks", keys=["/id"], auto_compact=None)
        store.flush()
        # Start publishing once the reader has opened the store and refreshed once,
        # so it follows the writer however slowly its interpreter starts.
        import os, time
        deadline = time.monotonic() + 60
        while not os.path.exists(done + ".ready") and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(4_000):
            pad = "x" * (i % 300)
            topic.publish({"id": i % 60, "v": i, "pad": pad, "sum": i * 1000 + len(pad)})
            if i % 173 == 0:
                topic.sow_delete_by_data({"id": (i + 7) % 60})
            if i % 700 == 699:
                topic.compact()
        final = {str(r.doc["id"]): r.doc["v"] for r in topic.sow()}
        store.flush()
    with open(done + ".tmp", "w") as fh:
        json.dump(final, fh)
    import os
    os.replace(done + ".tmp", done)
    """
)

READER = textwrap.dedent(
    """
    import json, os, sys, time
    from sowlib.errors import UnknownTopicError
    from sowlib.store import SowStore

    path, done = sys.argv[1], sys.argv[2]
    while not os.path.exists(path):
        time.sleep(0.01)
    store = SowStore(path, readonly=True)
    seen, loops, deadline = {}, 0, time.monotonic() + 90
    while time.monotonic() < deadline:
        finished = os.path.exists(done)
        store.refresh()
        loops += 1
        if loops == 1:
            open(done + ".ready", "w").close()
        try:
            records = store.topic("ticks").sow()
        except UnknownTopicError:
            records = []
        for r in records:
            d = r.doc
            assert d["sum"] == d["v"] * 1000 + len(d["pad"]), ("partial record", d)
            assert d["v"] >= seen.get(d["id"], -1), ("went back in time", d, seen[d["id"]])
            seen[d["id"]] = d["v"]
        if finished:
            with open(done) as fh:
                final = json.load(fh)
            state = {str(r.doc["id"]): r.doc["v"] for r in records}
            assert state == final, (state, final)
            print(json.dumps({"loops": loops, "keys": len(state)}))
            break
    else:
        raise SystemExit("timed out")
    """
)


def test_reader_process_follows_writer_through_compaction(tmp_path: Path) -> None:
    store, done = tmp_path / "store", tmp_path / "done.json"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store), str(done)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(store), str(done)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert writer.returncode == 0, writer.stderr
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["loops"] > 1
    assert summary["keys"] == len(json.loads(done.read_text()))
