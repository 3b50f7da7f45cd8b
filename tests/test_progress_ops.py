"""Long operations report ``progress(done, total)`` (issue 17): compact and verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from sowlib import SowStore
from sowlib.storage import verify


def _monotonic(calls: list[tuple[int, int | None]]) -> None:
    assert calls, "progress was never called"
    dones = [done for done, _ in calls]
    assert dones == sorted(dones)
    totals = {total for _, total in calls}
    assert len(totals) == 1
    assert calls[-1][0] == calls[-1][1]


@pytest.mark.parametrize("persistent", [True, False])
def test_compact_reports_copied_records(tmp_path: Path, persistent: bool) -> None:
    store = SowStore(tmp_path / "s") if persistent else SowStore()
    with store:
        topic = store.create_topic("t", keys=["/id"])
        topic.publish_many([{"id": i % 25_000, "v": i} for i in range(60_000)])
        calls: list[tuple[int, int | None]] = []
        topic.compact(progress=lambda done, total: calls.append((done, total)))
        _monotonic(calls)
        assert calls[-1] == (25_000, 25_000)
        assert len(topic) == 25_000
        record = topic.lookup(7)
        assert record is not None
        assert record.doc == {"id": 7, "v": 50_007}


def test_verify_reports_bytes_examined(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"])
        topic.publish_many([{"id": i, "pad": "x" * 200} for i in range(40_000)])
    (log,) = (tmp_path / "s").glob("*.sow")
    calls: list[tuple[int, int | None]] = []
    report = verify(log, progress=lambda done, total: calls.append((done, total)))
    assert report.ok
    _monotonic(calls)
    assert calls[-1] == (log.stat().st_size, log.stat().st_size)
    assert len(calls) > 1


def test_publish_many_reports_messages_read_from_an_iterator() -> None:
    topic = SowStore().create_topic("t", keys=["/id"])
    calls: list[tuple[int, int | None]] = []
    messages = ({"id": i} for i in range(25_000))
    results = topic.publish_many(messages, progress=lambda done, total: calls.append((done, total)))
    assert len(results) == len(topic) == 25_000
    dones = [done for done, _ in calls]
    assert dones == sorted(dones)
    assert dones[-1] == 25_000


def test_publish_many_progress_of_a_list_knows_its_total() -> None:
    topic = SowStore().create_topic("t", keys=["/id"])
    calls: list[tuple[int, int | None]] = []
    topic.publish_many(
        [{"id": i} for i in range(100)], progress=lambda done, total: calls.append((done, total))
    )
    assert calls[-1] == (100, 100)
