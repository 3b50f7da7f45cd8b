"""ShardedSink on S3 (moto on 127.0.0.1): ten micro-batches equal SowSink's single store.

Also: a batch replayed after the driver died between the shard commits and the store
commit, a batch delivered twice, reads with pushed filters and lookups from a UDF
against the shards' local copies.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from sowlib.errors import ConfigError
from sowlib.spark.shards import open_sharded, write_sharded
from sowlib.spark.shardsink import ShardedSink
from sowlib.spark.sink import SowSink
from sowlib.spark.udf import lookup_udf
from sowlib.store import SowStore

pytestmark = pytest.mark.spark

SCHEMA = "orderId long, price double, region string, gone boolean"


def batches(count: int = 10, rows: int = 120, seed: int = 3) -> list[list[tuple[Any, ...]]]:
    """Updates, inserts and deletes of 300 keys, some keys twice in one batch."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        batch = []
        for _ in range(rows):
            key = rng.randrange(300)
            gone = rng.random() < 0.1
            batch.append((key, round(rng.uniform(1, 100), 2), rng.choice("ABC"), gone))
        out.append(batch)
    return out


def _state(stores: list[SowStore]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for s in stores:
        if "orders" in s:
            out.update({r.doc["orderId"]: r.doc for r in s.topic("orders").sow()})
    return out


def test_ten_batches_equal_the_single_store(
    spark: Any, bucket: str, s3_options: dict[str, str], tmp_path: Path
) -> None:
    url = f"{bucket}/orders"
    data = batches()
    frames = [spark.createDataFrame(b, SCHEMA).repartition(3) for b in data]
    reference = tmp_path / "single"
    with SowSink(reference, "orders", keys=["/orderId"], delete_column="gone") as single:
        for i, df in enumerate(frames):
            single(df, i)
    opts: dict[str, Any] = {"storage_options": s3_options}
    sink = ShardedSink(url, "orders", keys=["/orderId"], shards=3, delete_column="gone", **opts)
    for i, df in enumerate(frames):
        if i == 3:  # the driver dies after the tasks committed their shard versions
            base = sink.store.latest()
            sink.apply(df, i, base)
            sink = ShardedSink(url, delete_column="gone", **opts)  # a restarted driver
        sink(df, i)
        if i == 5:
            sink(frames[0], 5)  # delivered again: skipped
    assert sink.last_batch_id == 9
    with SowStore(reference, readonly=True) as ref:
        expected = _state([ref])
        applied = ref.topic("orders").stats()["last_seq"]
    shards = open_sharded(url, **opts)
    try:
        assert _state(shards) == expected
        # every publish and delete applied exactly once: one sequence number each
        assert sum(s.topic("orders").stats()["last_seq"] for s in shards) == applied
    finally:
        for s in shards:
            s.close()

    # reads: one partition per shard, Spark's filter pushed into the shards
    reader = spark.read.format("sow").option("path", url).option("topic", "orders")
    for name, value in s3_options.items():
        reader = reader.option(f"storage.{name}", value)
    df = reader.load()
    assert df.rdd.getNumPartitions() == 3
    got = df.where("price > 50 AND region = 'B'").select("orderId").collect()
    want = {k for k, d in expected.items() if d["price"] > 50 and d["region"] == "B"}
    assert {r["orderId"] for r in got} == want
    assert want

    # lookups from a UDF on the executors
    price = lookup_udf(url, "orders", {"price": "double", "region": "string"}, **opts)
    probe = spark.range(0, 310).withColumn("o", price(F.col("id")))
    looked = {r["id"]: (r["o"]["price"], r["o"]["region"]) for r in probe.collect()}
    for key in range(310):
        doc = expected.get(key)
        assert looked[key] == ((doc["price"], doc["region"]) if doc else (None, None))


def test_write_sharded_to_a_url_then_stream_on(spark: Any, tmp_path: Path) -> None:
    url = (tmp_path / "root").as_uri()
    cache = str(tmp_path / "cache")
    df = spark.createDataFrame([(i, float(i), "A", False) for i in range(200)], SCHEMA)
    paths = write_sharded(df.drop("gone"), url, "orders", shards=2, keys=["/orderId"])
    assert paths == [f"{url}/shard-0000", f"{url}/shard-0001"]
    sink = ShardedSink(url, delete_column="gone", cache_dir=cache)
    assert sink.last_batch_id is None
    sink(spark.createDataFrame([(1, 9.0, "Z", False), (2, None, None, True)], SCHEMA), 0)
    shards = open_sharded(url)
    try:
        state = _state(shards)
    finally:
        for s in shards:
            s.close()
    assert len(state) == 199
    assert state[1] == {"orderId": 1, "price": 9.0, "region": "Z"}
    assert 2 not in state
    with pytest.raises(ConfigError):
        ShardedSink((tmp_path / "none").as_uri())
    with pytest.raises(ConfigError):
        sink(spark.createDataFrame([(1,)], "x long"), 1)
