"""Spark pipeline: stream order updates into a SOW topic, then query it with AMPS filters.

Spark's ``rate`` source makes ~200 rows a second; each becomes an order update
(500 distinct orders). ``SowSink`` applies every micro-batch to ``var/spark_sow``
exactly once; afterwards the latest state is queried from Python and through the
``sow`` data source. Needs pyspark and Java; runs in well under a minute:

    python examples/spark_pipeline.py
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sowlib.spark import local_session
from sowlib.spark.sink import SowSink

VAR = Path("var")
STORE = VAR / "spark_sow"
CHECKPOINT = VAR / "spark_checkpoint"
RUN_SECONDS = 12
MIN_BATCHES = 4
MAX_SECONDS = 40
FILTER = "/price > 100 AND /region IN ('EU','APAC')"


def orders_stream(spark: SparkSession) -> DataFrame:
    """The rate source mapped to order-like rows: orderId, symbol, price, region, ts."""
    regions = F.array(*[F.lit(r) for r in ("EU", "US", "APAC", "LATAM")])
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 200)
        .load()
        .select(
            (F.col("value") % 500).alias("orderId"),
            F.concat(F.lit("S"), F.lpad((F.col("value") % 37).cast("string"), 3, "0")).alias(
                "symbol"
            ),
            F.round(F.lit(1.0) + (F.col("value") * 7919 % 20000) / 100.0, 2).alias("price"),
            F.element_at(regions, (F.col("value") % 4 + 1).cast("int")).alias("region"),
            F.col("timestamp").cast("string").alias("ts"),
        )
    )


def main() -> None:
    for path in (STORE, CHECKPOINT):
        shutil.rmtree(path, ignore_errors=True)  # every run starts from nothing
    VAR.mkdir(exist_ok=True)
    spark = local_session(2, app_name="sowlib-spark-pipeline")

    sink = SowSink(STORE, "orders", keys=["/orderId"], create_kwargs={"indexes": ["/price"]})
    query = (
        orders_stream(spark)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(CHECKPOINT))
        .trigger(processingTime="2 seconds")
        .start()
    )
    started = time.monotonic()
    # run ~RUN_SECONDS, longer on a slow machine until MIN_BATCHES have landed
    while query.exception() is None and time.monotonic() - started < MAX_SECONDS:
        done = (sink.last_batch_id or 0) + 1
        if time.monotonic() - started >= RUN_SECONDS and done >= MIN_BATCHES:
            break
        time.sleep(0.2)
    # stop between triggers, right after a batch finished, not in the middle of one
    last, waited = sink.last_batch_id, time.monotonic()
    while sink.last_batch_id == last and time.monotonic() - waited < 10:
        time.sleep(0.05)
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the streaming query failed: {query.exception()}")
    batches = sink.last_batch_id
    orders = sink.topic
    print(f"applied {0 if batches is None else batches + 1} micro-batches; {len(orders)} orders")
    regions: dict[str, int] = {}
    for rec in orders.sow():
        regions[rec.doc["region"]] = regions.get(rec.doc["region"], 0) + 1
    print("orders per region:", ", ".join(f"{r} {n}" for r, n in sorted(regions.items())))

    print(f"\ntop 5 by price where {FILTER}:")
    for rec in orders.sow(FILTER, order_by="/price DESC", top_n=5):
        doc = rec.doc
        print(
            f"  order {doc['orderId']:>3}  {doc['symbol']}  {doc['price']:>7.2f}  {doc['region']}"
        )
    expected = len(orders.sow(FILTER))
    sink.close()

    def load(**options: str) -> DataFrame:
        reader = spark.read.format("sow").option("path", str(STORE)).option("topic", "orders")
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()  # a fresh DataFrame per query (see docs/spark.md)

    by_option = load(filter=FILTER).count()
    pushed = load().where((F.col("price") > 100) & F.col("region").isin("EU", "APAC")).count()
    print(f"\nsame filter: sowlib {expected}, Spark filter option {by_option}, pushdown {pushed}")
    spark.stop()
    if not expected == by_option == pushed:
        raise SystemExit("the three answers differ")


if __name__ == "__main__":
    main()
