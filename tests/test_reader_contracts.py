"""The C reader by key (``Reader``, reader.c) is handed what it reads: the key map's table
and the log's map by their owners each time they change, the expiry queue and the lock
once. These tests change each of them under it and check that it never reads a stale
one: the log growing (a new map while the old one stays open), compaction (a new file,
new offsets, a new table), a read-only opener refreshing after a writer in another
process grew the file, a reopen that loads expirations into the queue, and close.

"Read in C" is checked by the reader answering itself (``rows`` with nothing pending,
``lookup`` not NotImplemented); the answers are checked against the Python path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib.topic import slots

pytestmark = pytest.mark.skipif(not slots.NATIVE_SLOTS, reason="the C key table is not built")

PAD = "p" * 200


def views_of(topic: Any) -> Any:
    return topic._p.views


def content_keys(topic: Any, ids: range) -> list[int]:
    views = views_of(topic)
    return [views.keys.key_of(topic.key_for({"id": i})) for i in ids]


def read_in_c(topic: Any, ids: range) -> list[Any]:
    """The docs of ``ids`` read by the C reader, which must read every one itself, and
    equal to what the Python path reads."""
    views = views_of(topic)
    keys = content_keys(topic, ids)
    got = views._reader.rows(keys)
    assert got is not NotImplemented
    rows, pending = got
    assert pending == 0
    assert [r[:8] for r in rows] == [r[:8] for r in views.records_of_log(keys)]
    for i in ids:
        rec = topic._read_key(i)
        assert rec is not NotImplemented
        assert rec is not None
    return [r.doc for r in rows]


def test_reads_after_the_log_grows_use_the_new_map(tmp_path: Path) -> None:
    with SowStore(str(tmp_path), cache_bytes=0) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish({"id": 0, "v": 0, "pad": PAD})
        log: Any = t._p.log  # the mapped log (the Log protocol does not name its map)
        first = log.mm
        assert read_in_c(t, range(1)) == [{"id": 0, "v": 0, "pad": PAD}]
        grown = 0
        for step in range(1, 4):
            size = len(log.mm)
            lo = step * 5000
            t.publish_many([{"id": i, "v": step, "pad": PAD} for i in range(lo, lo + 5000)])
            grown += len(log.mm) > size
            # the new records lie past the end of the old map: a reader holding it
            # could not read them
            docs = read_in_c(t, range(lo, lo + 5000))
            assert [d["v"] for d in docs] == [step] * 5000
        assert grown >= 2
        assert log.mm is not first


def test_reads_after_compaction_use_the_new_file_and_table(tmp_path: Path) -> None:
    with SowStore(str(tmp_path), cache_bytes=0) as store:
        t = store.create_topic("t", keys=["/id"])
        for v in range(4):
            t.publish_many([{"id": i, "v": v, "pad": PAD} for i in range(500)])
        keys = content_keys(t, range(500))
        before = dict(zip(keys, map(views_of(t).keys.offset, keys), strict=True))
        table = views_of(t).keys.slots
        t.compact()
        assert views_of(t).keys.slots is not table
        assert any(views_of(t).keys.offset(k) != off for k, off in before.items())
        assert [d["v"] for d in read_in_c(t, range(500))] == [3] * 500
        t.publish({"id": 7, "v": 9, "pad": PAD})
        found = t.lookup(7)
        assert found is not None
        assert found.doc["v"] == 9


def test_reads_after_a_reload_of_the_table_use_the_new_table(tmp_path: Path) -> None:
    """A bulk load installs a new table; the reader is told."""
    with SowStore(str(tmp_path), cache_bytes=0) as store:
        t = store.create_topic("t", keys=["/id"])
        t.publish_many([{"id": i, "pad": PAD} for i in range(3000)])
    with SowStore(str(tmp_path), cache_bytes=0) as store:
        t = store.topic("t")
        assert views_of(t).keys.slots is not None
        assert len(read_in_c(t, range(3000))) == 3000


_WRITER = """
import sys
from sowlib import SowStore
path, lo, hi, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with SowStore(path) as store:
    t = store.topic("t")
    t.publish_many([{"id": i, "v": value, "pad": "p" * 200} for i in range(lo, hi)])
"""


def write_in_another_process(path: Path, lo: int, hi: int, value: int) -> None:
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), str(lo), str(hi), str(value)],
        check=True,
        timeout=120,
    )


def test_a_read_only_opener_reads_in_c_what_another_process_wrote(tmp_path: Path) -> None:
    with SowStore(str(tmp_path)) as store:
        store.create_topic("t", keys=["/id"]).publish({"id": 0, "v": 0, "pad": PAD})
    with SowStore(str(tmp_path), readonly=True, cache_bytes=0) as reader:
        t = reader.topic("t")
        log: Any = t._p.log  # the mapped log (the Log protocol does not name its map)
        assert read_in_c(t, range(1))[0]["v"] == 0
        maps = {id(log.mm)}
        for step in range(1, 4):
            lo = step * 4000
            write_in_another_process(tmp_path, lo, lo + 4000, step)
            write_in_another_process(tmp_path, 0, 1, step)  # an update of key 0
            assert t.refresh() > 0
            maps.add(id(log.mm))
            docs = read_in_c(t, range(lo, lo + 4000))
            assert {d["v"] for d in docs} == {step}
            assert read_in_c(t, range(1))[0]["v"] == step
        assert len(maps) > 1  # the refreshes mapped the grown file anew


def test_expirations_loaded_at_reopen_are_seen_by_the_reader(tmp_path: Path) -> None:
    """The reader holds the expiry queue bound before the reopen loads it: loaded in
    place, a due expiration hands even a lookup of another key to the Python path,
    which applies it first (a reader holding a stale, empty queue would answer itself
    and leave the expired record in place)."""
    now = [1000.0]
    with SowStore(str(tmp_path), clock=lambda: now[0]) as store:
        t = store.create_topic("t", keys=["/id"], expiration="enabled")
        t.publish({"id": 1}, expiration=5)
        t.publish({"id": 2})
    with SowStore(str(tmp_path), clock=lambda: now[0]) as store:
        t = store.topic("t")
        assert len(t._p.expiry) == 1
        read_key: Any = t._read_key
        assert read_key(2) is NotImplemented  # an expiration pending: the Python path
        now[0] = 1010.0
        assert t.lookup(2) is not None
        assert len(t) == 1  # key 1 expired by that lookup
        assert t.lookup(1) is None
        assert read_key(2) is not NotImplemented  # nothing pending: read in C


def test_after_close_the_reader_holds_no_map(tmp_path: Path) -> None:
    store = SowStore(str(tmp_path))
    t = store.create_topic("t", keys=["/id"])
    t.publish({"id": 1, "pad": PAD})
    reader = views_of(t)._reader
    key = content_keys(t, range(1))
    assert reader.rows(key)[1] == 0
    store.close()
    assert reader.rows(key) is NotImplemented
