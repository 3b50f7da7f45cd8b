"""``sowlib.spark.read`` / ``write``: the ``sow`` data source with keyword options (issue 27)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import SparkSetupError
from sowlib.spark import read, write
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

ORDERS = [
    {"orderId": 1, "price": 120.5, "region": "EU"},
    {"orderId": 2, "price": 80.0, "region": "APAC"},
    {"orderId": 3, "price": 300.0, "region": "US"},
]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    with SowStore(tmp_path / "sow") as store:
        store.create_topic("orders", keys=["/orderId"]).publish_many(ORDERS)
    return tmp_path / "sow"


def _ids(df: Any) -> list[int]:
    return sorted(int(r["orderId"]) for r in df.collect())


def test_read_takes_the_options_as_keywords(spark: Any, store_path: Path) -> None:
    assert _ids(read(spark, store_path, "orders")) == [1, 2, 3]
    assert _ids(read(spark, str(store_path), "orders", filter="/price > 100")) == [1, 3]
    # a boolean is written as Spark's "false"; None leaves the option out
    off = read(spark, store_path, "orders", pushdown=False, schema=None)
    assert _ids(off.where("region = 'EU'")) == [1]
    typed = read(spark, store_path, "orders", schema="orderId long, region string")
    assert typed.columns[:2] == ["orderId", "region"]


def test_write_appends_rows_as_messages(spark: Any, store_path: Path) -> None:
    df = spark.createDataFrame([(4, 99.5, "US")], "orderId long, price double, region string")
    write(df, store_path, "orders")
    assert _ids(read(spark, store_path, "orders")) == [1, 2, 3, 4]


def test_read_without_a_topic_keeps_the_sources_own_error(spark: Any, store_path: Path) -> None:
    # a mistake in the read is not a set-up problem: Spark's error passes unchanged
    with pytest.raises(Exception, match="topic") as caught:
        read(spark, store_path).collect()
    assert not isinstance(caught.value, SparkSetupError)
