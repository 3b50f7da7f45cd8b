"""``local_session``: the shared session is one it built, with sowlib's settings."""

from __future__ import annotations

from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark import local_session

pytestmark = pytest.mark.spark


def test_the_session_has_sowlib_settings_and_the_sow_source(spark: Any, tmp_path: Any) -> None:
    conf = spark.conf
    assert conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.sql.shuffle.partitions") == "2"
    assert local_session(2) is spark  # get-or-create: the running session
    from sowlib import SowStore

    with SowStore(tmp_path / "s") as store:
        store.create_topic("t", keys=["/id"]).publish_many(['{"id": 1, "px": 5}'])
    df = spark.read.format("sow").option("path", str(tmp_path / "s")).option("topic", "t").load()
    assert [r["px"] for r in df.collect()] == [5]


@pytest.mark.parametrize("cores", [0, -1, 1.5, True, "2"])
def test_bad_core_counts_are_refused(cores: Any) -> None:
    with pytest.raises(ConfigError):
        local_session(cores)
