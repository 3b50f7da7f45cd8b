"""The descriptor of a file a compaction replaced is closed, from a daemon thread.

A writer's compaction and a read-only opener continuing on the compacted file both hand
the old file's descriptor (its last link, once renamed over) to ``fs.close_replaced``,
which closes it off the caller's thread. These tests hold that it is closed all the
same: no descriptor is left open after many compactions, by the writer or a follower.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.storage.fs import close_replaced

_FDS = Path("/proc/self/fd")
pytestmark = pytest.mark.skipif(not _FDS.exists(), reason="needs /proc/self/fd")


def _settled_fds() -> int:
    """Open descriptors once no closing thread is left (waits up to 5 s)."""
    deadline = time.monotonic() + 5
    while any(t.name == "sowlib-close-replaced" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a close_replaced thread never ended"
        time.sleep(0.01)
    return len(os.listdir(_FDS))


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_the_descriptor_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    fd = os.open(path, os.O_RDONLY)
    (tmp_path / "g").write_bytes(b"y")
    os.replace(tmp_path / "g", path)  # fd is now the old file's last link
    close_replaced(fd)
    _settled_fds()
    assert _closed(fd)


def test_the_map_is_closed_with_it(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    fd = os.open(path, os.O_RDWR)
    mm = mmap.mmap(fd, 4096)
    close_replaced(fd, mm)
    _settled_fds()
    assert mm.closed
    assert _closed(fd)


def test_a_map_still_viewed_is_left_to_its_views(tmp_path: Path) -> None:
    """A map with a view into it cannot be closed: the descriptor is closed all the same,
    nothing raises, and the map stays readable while the view lives."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 4096)
    fd = os.open(path, os.O_RDWR)
    mm = mmap.mmap(fd, 4096)
    view = memoryview(mm)
    close_replaced(fd, mm)
    _settled_fds()
    assert _closed(fd)
    assert not mm.closed
    assert view[:1] == b"x"
    view.release()
    mm.close()


def test_without_a_thread_the_descriptor_is_closed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    fd = os.open(tmp_path, os.O_RDONLY)
    close_replaced(fd)
    assert _closed(fd)


def test_compactions_leave_no_descriptor_open(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as writer:
        topic = writer.create_topic("t", keys=["/id"], auto_compact=None)
        topic.publish_many([b'{"id": %d, "v": 0}' % i for i in range(500)])
        writer.flush()
        with SowStore(tmp_path / "s", readonly=True) as reader:
            follower = reader.topic("t")
            before = _settled_fds()
            for round_ in range(1, 6):
                updates = [b'{"id": %d, "v": %d}' % (i, round_) for i in range(0, 500, 2)]
                topic.publish_many(updates)
                topic.compact()
                writer.flush()
                reader.refresh()  # continues on the compacted file
                got = follower.lookup(2)
                assert got is not None
                assert got.doc["v"] == round_
            assert _settled_fds() == before
            assert len(follower) == len(topic) == 500
