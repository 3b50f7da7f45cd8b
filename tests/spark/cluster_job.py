"""The sharded sink on ``local-cluster[2,1,1024]``: run by ``test_cluster.py`` in its own process.

Usage: ``python cluster_job.py ROOT_URL ENDPOINT MARKER_FILE``. Two executor processes with
their own working and local directories; the store is on S3 (moto at ENDPOINT), so
they share no path. Ten micro-batches of Spark's ``rate-micro-batch`` stream go
through :class:`ShardedSink`; a UDF fails the first attempt of one task of batch 3
(Spark retries it). Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sowlib.spark.shardsink import ShardedSink
from sowlib.spark.udf import lookup_udf

ROWS = 50
FAIL_AT = 3 * ROWS + 7


def failing_once(marker: str) -> Any:
    """A function raising on the first attempt of the task holding ``FAIL_AT``; it
    leaves ``marker`` (a file of the test's, not of the store) so the test knows."""

    def fail_once(value: int) -> int:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if value == FAIL_AT and ctx is not None and ctx.attemptNumber() == 0:
            with open(marker, "a", encoding="utf-8") as fh:
                fh.write(f"attempt 0 of task {ctx.taskAttemptId()} killed\n")
            raise RuntimeError("the task is killed on its first attempt")
        return value

    return fail_once


def expected(last_batch: int) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for v in range((last_batch + 1) * ROWS):
        key = v % 97
        if v % 11 == 0:
            state.pop(key, None)
        else:
            state[key] = {"orderId": key, "price": float(v), "region": "AB"[v % 2]}
    return state


def main(url: str, endpoint: str, marker: str) -> dict[str, Any]:
    opts = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    guard = F.udf(failing_once(marker), T.LongType())
    stream = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", ROWS)
        .option("numPartitions", 2)
        .load()
        .select(guard(F.col("value")).alias("v"))
        .select(
            (F.col("v") % 97).alias("orderId"),
            F.col("v").cast("double").alias("price"),
            F.when(F.col("v") % 2 == 0, "A").otherwise("B").alias("region"),
            (F.col("v") % 11 == 0).alias("gone"),
        )
    )
    sink = ShardedSink(
        url, "orders", keys=["/orderId"], shards=2, delete_column="gone", storage_options=opts
    )
    query = stream.writeStream.foreachBatch(sink).trigger(processingTime="0 seconds").start()
    deadline = time.monotonic() + 400
    while (sink.last_batch_id or -1) < 9 and time.monotonic() < deadline:
        if query.exception() is not None:
            break
        time.sleep(0.5)
    query.stop()
    last = sink.last_batch_id or -1
    want = expected(last)
    reader = spark.read.format("sow").option("path", url).option("topic", "orders")
    for name, value in opts.items():
        reader = reader.option(f"storage.{name}", value)
    rows = reader.load().where("region = 'A' AND price > 100").collect()
    filtered = sorted(int(r["orderId"]) for r in rows)
    everything = {
        int(r["orderId"]): {
            "orderId": int(r["orderId"]),
            "price": r["price"],
            "region": r["region"],
        }
        for r in reader.load().select("orderId", "price", "region").collect()
    }
    price = lookup_udf(url, "orders", {"price": "double"}, storage_options=opts)
    looked = {
        int(r["id"]): r["o"]["price"]
        for r in spark.range(0, 100, numPartitions=4).withColumn("o", price("id")).collect()
    }

    def where(_: int, items: Any) -> Any:
        yield os.environ.get("SPARK_LOCAL_DIRS"), os.getcwd()

    places = spark.sparkContext.parallelize(range(8), 8).mapPartitionsWithIndex(where).collect()
    spark.stop()
    return {
        "last_batch": last,
        "error": None if query.exception() is None else str(query.exception())[:2000],
        "state_ok": everything == want,
        "filtered_ok": filtered
        == sorted(k for k, d in want.items() if d["region"] == "A" and d["price"] > 100),
        "lookup_ok": looked == {k: (want[k]["price"] if k in want else None) for k in range(100)},
        "local_dirs": sorted({p[0] for p in places if p[0]}),
        "work_dirs": sorted({p[1] for p in places}),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3])))
