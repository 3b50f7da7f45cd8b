"""``write_sharded(progress=...)`` reports the job's Spark tasks, monotonically (issue 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark import open_sharded, write_sharded

pytestmark = pytest.mark.spark


def test_write_sharded_reports_monotonic_task_counts(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(i, f"n{i}") for i in range(200)], "id long, name string")
    seen: list[tuple[int, int | None]] = []
    paths = write_sharded(
        df.repartition(3),
        tmp_path / "sharded",
        "t",
        shards=4,
        keys=["/id"],
        progress=lambda done, total: seen.append((done, total)),
    )
    assert len(paths) == 4
    assert seen[0][0] == 0
    dones = [d for d, _ in seen]
    assert dones == sorted(dones)
    totals = [t for _, t in seen if t is not None]
    assert totals == sorted(totals)
    assert all(t is None or d <= t for d, t in seen)
    assert seen[-1][0] == seen[-1][1]
    assert seen[-1][1] is not None
    assert seen[-1][1] >= 4  # at least the four shard-writing tasks
    stores = open_sharded(tmp_path / "sharded")
    try:
        assert sum(len(s.topic("t")) for s in stores) == 200
    finally:
        for s in stores:
            s.close()


def test_write_sharded_rejects_a_bad_progress_before_any_work(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(ConfigError):
        write_sharded(df, tmp_path / "s", "t", shards=2, keys=["/id"], progress="yes")  # type: ignore[arg-type]
    assert not (tmp_path / "s").exists()
