"""Sharded stores: stable routing, one task per shard, read back equal to a single store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import ConfigError
from sowlib.spark.datasource import register
from sowlib.spark.shards import (
    is_sharded,
    open_sharded,
    shard_of,
    shard_paths,
    write_sharded,
)
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

FILTER = "/price > 250 AND /region IN ('R1', 'R5') AND /qty < 500"


def test_shard_of_is_stable_and_follows_key_text() -> None:
    assert shard_of([42], 4) == shard_of(["42"], 4) == shard_of([42.0], 4)
    assert shard_of([1, "a"]) == shard_of([1, "a"])
    assert shard_of([1, "a"]) != shard_of(["a", 1])
    assert {shard_of([i], 4) for i in range(100)} == {0, 1, 2, 3}
    with pytest.raises(ConfigError):
        shard_of([1], 0)


def test_sharded_write_reads_back_like_one_store(
    spark: Any, tmp_path: Path, workload: list[dict[str, Any]]
) -> None:
    register(spark)
    single = tmp_path / "single"
    with SowStore(single) as store:
        store.create_topic("orders", keys=["/orderId"]).publish_many(workload)
    columns = list(workload[0])
    ddl = (
        "orderId long, customerId long, symbol string, price double, qty long, side string,"
        " region string, ts long"
    )
    df = spark.createDataFrame([tuple(o[c] for c in columns) for o in workload], ddl)
    sharded = tmp_path / "sharded"
    paths = write_sharded(df, sharded, "orders", shards=4, keys=["/orderId"])
    assert paths == shard_paths(sharded)
    assert is_sharded(sharded)
    assert sorted(os.listdir(sharded)) == ["_sharded.json", *[f"shard-000{i}" for i in range(4)]]

    stores = open_sharded(sharded)
    try:
        counts = [len(s.topic("orders")) for s in stores]
        assert sum(counts) == len(workload)
        assert min(counts) > 0
        for index, s in enumerate(stores):
            for rec in s.topic("orders").sow(top_n=50):
                assert shard_of([rec.doc["orderId"]], 4) == index
    finally:
        for s in stores:
            s.close()

    with SowStore(single, readonly=True) as store:
        expected = sorted(r.doc["orderId"] for r in store.topic("orders").sow(FILTER))
    reader = spark.read.format("sow").option("path", str(sharded)).option("topic", "orders")
    df_read = reader.option("filter", FILTER).load()
    assert df_read.rdd.getNumPartitions() == 4
    assert sorted(r["orderId"] for r in df_read.select("orderId").collect()) == expected
    assert expected
    with pytest.raises(ConfigError):
        write_sharded(df, sharded, "orders", shards=4, keys=["/orderId"])
