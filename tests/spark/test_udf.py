"""Lookup UDFs enrich rows with the latest record per key, refreshed as the writer publishes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark import _handles
from sowlib.spark.udf import lookup_map_in_pandas, lookup_udf
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

CUSTOMERS = [{"customerId": i, "name": f"c{i}", "tier": i % 3, "limit": i * 1.5} for i in range(50)]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    with SowStore(tmp_path / "sow") as store:
        store.create_topic("customers", keys=["/customerId"]).publish_many(CUSTOMERS)
    return tmp_path / "sow"


def test_lookup_udf_returns_latest_fields_per_key(spark: Any, store_path: Path) -> None:
    orders = spark.createDataFrame([(i, i * 7 % 60) for i in range(30)], "orderId int, cust long")
    customer = lookup_udf(store_path, "customers", ["name", "tier"])
    got = orders.select("orderId", "cust", customer("cust").alias("c")).collect()
    for row in got:
        if row["cust"] < 50:
            assert (row["c"]["name"], row["c"]["tier"]) == (f"c{row['cust']}", row["cust"] % 3)
        else:
            assert (row["c"]["name"], row["c"]["tier"]) == (None, None)
    assert len(got) == 30


def test_lookup_map_in_pandas_appends_columns(spark: Any, store_path: Path) -> None:
    df = spark.createDataFrame(
        [(1, "x"), (49, "y"), (77, "z"), (None, "n")], "cid long, tag string"
    )
    out = lookup_map_in_pandas(
        df, store_path, "customers", ["cid"], {"name": "string", "limit": "double"}
    )
    assert out.columns == ["cid", "tag", "name", "limit"]
    got = {r["tag"]: (r["name"], r["limit"]) for r in out.collect()}
    assert got == {"x": ("c1", 1.5), "y": ("c49", 73.5), "z": (None, None), "n": (None, None)}
    with pytest.raises(ConfigError) as info:
        lookup_map_in_pandas(df, store_path, "customers", ["cid"], ["tag"])
    assert info.value.where == "fields"
    with pytest.raises(ConfigError):
        lookup_map_in_pandas(df, store_path, "customers", ["nope"], ["name"])


def test_handles_are_cached_and_refreshed(store_path: Path) -> None:
    first = _handles.reader(store_path)
    assert _handles.reader(store_path) is first
    with SowStore(store_path) as store:
        store.topic("customers").publish({"customerId": 1, "name": "renamed"})
    topic = _handles.reader(store_path).topic("customers")
    assert topic.get(topic.key_for({"customerId": 1})).doc["name"] == "renamed"  # type: ignore[union-attr]
    _handles.clear()
    assert first.closed
