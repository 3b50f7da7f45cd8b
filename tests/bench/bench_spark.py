"""Benchmarks of the Spark integration at tiny sizes: sink, data-source read, lookup UDF.

``spark_report.py`` measures the same things at full size. Marked ``spark``; skipped
when pyspark or Java is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from spark_report import (
    BATCH_ROWS,
    CUSTOMERS,
    PRICE_FLOOR,
    orders_frame,
    read_once,
    session,
    write_stores,
)
from workload import to_json, unique_orders

from sowlib import SowStore

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"),
]

#: Orders per benchmark (one sink batch).
ORDERS = 2_000
#: Rows enriched per lookup benchmark.
LOOKUP_ROWS = 20_000
#: Rounds for benchmarks that run a Spark job.
ROUNDS = 3


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A ``local[2]`` session for this module."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime on PATH and JAVA_HOME is unset")
    spark = session(2)
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def orders_df(spark: Any) -> Any:
    """The first 2,000 unique orders as a cached DataFrame."""
    return orders_frame(spark, list(unique_orders(ORDERS)))


@pytest.mark.benchmark(group="spark-sink")
def test_sow_sink_batch(
    benchmark: Any, spark: Any, orders_df: Any, fresh_dir: Callable[[], str]
) -> None:
    from sowlib.spark import SowSink

    sinks: list[Any] = []

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        sinks.append(SowSink(fresh_dir(), "orders", keys=["/orderId"]))
        return (sinks[-1],), {}

    benchmark.pedantic(lambda sink: sink(orders_df, 0), setup=setup, rounds=ROUNDS)
    assert all(len(s.topic) == ORDERS for s in sinks)
    assert ORDERS <= BATCH_ROWS
    for sink in sinks:
        sink.close()


@pytest.mark.benchmark(group="spark-sink")
def test_publish_many_same_rows(benchmark: Any, new_topic: Any) -> None:
    payloads = [to_json(o) for o in unique_orders(ORDERS)]
    result = benchmark.pedantic(
        lambda t: t.publish_many(payloads), setup=lambda: ((new_topic(),), {}), rounds=ROUNDS
    )
    assert len(result) == ORDERS


@pytest.fixture(scope="module")
def sharded(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[int, str]:
    """Stores of the 2,000 orders with 1, 2 and 4 shards."""
    return write_stores(spark, ORDERS, str(tmp_path_factory.mktemp("sharded")))


@pytest.mark.benchmark(group="spark-read")
@pytest.mark.parametrize("shards", [1, 2, 4])
def test_read_pushed_filter_count(
    benchmark: Any, spark: Any, sharded: dict[int, str], shards: int
) -> None:
    expected = sum(1 for o in unique_orders(ORDERS) if o["price"] > PRICE_FLOOR)
    got = benchmark.pedantic(read_once, args=(spark, sharded[shards], shards), rounds=ROUNDS)
    assert got == expected


@pytest.fixture(scope="module")
def lookup_frames(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """(UDF-enriched, broadcast-joined) DataFrames of 20,000 rows keyed on customerId."""
    from pyspark.sql import functions as F

    from sowlib.spark import lookup_udf

    customers = [
        {"customerId": f"CUST-{i:05d}", "name": f"customer {i}", "tier": i % 5}
        for i in range(CUSTOMERS)
    ]
    path = str(tmp_path_factory.mktemp("lookup") / "customers")
    with SowStore(path) as store:
        store.create_topic("customers", keys=["/customerId"]).publish_many(customers)
    df = spark.range(LOOKUP_ROWS, numPartitions=2).select(
        F.col("id").alias("orderId"),
        F.format_string("CUST-%05d", (F.col("id") * 7919) % CUSTOMERS).alias("customerId"),
    )
    customer = lookup_udf(path, "customers", {"name": "string", "tier": "bigint"})
    enriched = df.select("orderId", customer("customerId").alias("c")).select(
        "orderId", "c.name", "c.tier"
    )
    table = spark.createDataFrame(customers, "customerId string, name string, tier long")
    joined = df.join(F.broadcast(table), "customerId").select("orderId", "name", "tier")
    return enriched, joined


def _count_named(frame: Any) -> int:
    from pyspark.sql import functions as F

    return int(frame.agg(F.count("name")).first()[0])


@pytest.mark.benchmark(group="spark-lookup")
def test_lookup_udf_enrichment(benchmark: Any, lookup_frames: tuple[Any, Any]) -> None:
    assert benchmark.pedantic(_count_named, args=(lookup_frames[0],), rounds=ROUNDS) == (
        LOOKUP_ROWS
    )


@pytest.mark.benchmark(group="spark-lookup")
def test_broadcast_join_baseline(benchmark: Any, lookup_frames: tuple[Any, Any]) -> None:
    assert benchmark.pedantic(_count_named, args=(lookup_frames[1],), rounds=ROUNDS) == (
        LOOKUP_ROWS
    )
