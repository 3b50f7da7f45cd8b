"""``progress=`` on verify takes every form the other long operations take (issue 27)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from tqdm import tqdm

import sowlib
from sowlib.errors import ConfigError
from sowlib.storage import verify as verify_log


def _log(tmp_path: Path) -> str:
    with sowlib.SowStore(str(tmp_path)) as store:
        topic = store.create_topic("t", keys=["/id"])
        topic.publish_many([{"id": i, "pad": "x" * 100} for i in range(500)])
        return topic.path


@pytest.mark.parametrize("progress", [True, False, None])
def test_verify_takes_true_false_and_none(tmp_path: Path, progress: bool | None) -> None:
    report = sowlib.verify(_log(tmp_path), progress=progress)
    assert report.ok
    assert report.records == 500


def test_verify_reports_bytes_to_a_callable(tmp_path: Path) -> None:
    calls: list[tuple[int, int | None]] = []
    sowlib.verify(_log(tmp_path), progress=lambda done, total: calls.append((done, total)))
    assert calls
    assert calls[-1][0] == calls[-1][1]
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_verify_advances_a_tqdm_bar_it_does_not_close(tmp_path: Path) -> None:
    path = _log(tmp_path)
    sink = io.StringIO()
    with tqdm(disable=False, file=sink) as bar:
        sowlib.verify(path, progress=bar)
        assert bar.n > 0
        assert not bar.disable  # still open: the caller owns it


def test_storage_verify_says_what_it_takes(tmp_path: Path) -> None:
    path = _log(tmp_path)
    with pytest.raises(ConfigError, match=r"sowlib\.verify"):
        verify_log(path, progress=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="progress"):
        sowlib.verify(path, progress="yes")  # type: ignore[arg-type]
