"""``publish_flush(timeout)``: every publish durable, or ``TimedOutException`` in time.

Spec (AMPS client): ``publish_flush`` waits until the server has processed (and, with
a persisted acknowledgement, stored) every message published so far, and raises
``TimedOutException`` when that does not happen within ``timeout`` milliseconds.
In process every publish is processed when it returns; the wait is the fsync.
The slow disk is a file-system seam whose ``fsync`` waits.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib import SowStore
from sowlib.storage.fs import FileSystem

URI = "tcp://127.0.0.1:9207/amps/json"


class SlowDisk(FileSystem):
    """An fsync that waits until the test lets it finish."""

    def __init__(self) -> None:
        self.slow = False
        self.release = threading.Event()
        self.synced = 0

    def fsync(self, fd: int) -> None:
        if self.slow:
            self.release.wait(30)
        super().fsync(fd)
        self.synced += 1


@pytest.fixture
def slow(tmp_path: Path):
    disk = SlowDisk()
    store = SowStore(tmp_path / "store", fs=disk)
    store.create_topic("orders", keys=["/id"])
    AMPS.reset()
    AMPS.attach(store, URI)
    client = AMPS.Client("flusher")
    client.connect(URI)
    client.logon()
    yield client, disk
    disk.release.set()
    client.close()
    AMPS.reset()
    store.close()


def test_publish_flush_waits_for_the_disk_without_a_timeout(slow) -> None:
    client, disk = slow
    client.publish("orders", '{"id": 1}')
    client.publish_flush()
    assert disk.synced >= 1


def test_publish_flush_past_its_timeout_raises_and_the_flush_goes_on(slow) -> None:
    client, disk = slow
    client.publish("orders", '{"id": 1}')
    disk.slow = True
    with pytest.raises(AMPS.TimedOutException, match="within 50 ms"):
        client.publish_flush(50)
    before = disk.synced
    disk.release.set()  # the disk catches up: the flush started then finishes
    client.publish_flush(10_000)
    assert disk.synced > before


def test_publish_flush_within_its_timeout_returns(slow) -> None:
    client, disk = slow
    client.publish("orders", '{"id": 2}')
    client.publish_flush(10_000)
    assert disk.synced >= 1


@pytest.mark.parametrize("timeout", [-1, "soon", True, None])
def test_publish_flush_refuses_a_timeout_that_is_not_milliseconds(slow, timeout) -> None:
    client, _ = slow
    with pytest.raises(AMPS.UsageException, match="timeout"):
        client.publish_flush(timeout)
