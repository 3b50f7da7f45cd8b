"""A Spark job whose Python workers cannot import sowlib: run by ``test_missing_sowlib.py``.

Usage: ``python missing_sowlib_job.py CHECKOUT STORE_DIR OUT_DIR``. The driver imports
sowlib from CHECKOUT (put on ``sys.path`` here, not on ``PYTHONPATH``, which the
workers would inherit); ``PYSPARK_PYTHON`` names a Python without sowlib. Each
scenario records what it raised; prints one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any


def _caught(action: Callable[[], object]) -> dict[str, Any]:
    try:
        action()
    except Exception as exc:  # what was raised is the result
        from sowlib.errors import SparkSetupError

        cause = exc.__cause__
        return {
            "type": type(exc).__name__,
            "setup_error": isinstance(exc, SparkSetupError),
            "problem": getattr(exc, "problem", None),
            "python": getattr(exc, "python", None),
            "detail": getattr(exc, "detail", None),
            "message": str(exc)[:3000],
            "cause": None if cause is None else type(cause).__name__,
            "cause_text": None if cause is None else str(cause)[:2000],
        }
    return {"type": None}


def main(store: str, out: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import sowlib.spark as sow

    builder = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    result: dict[str, Any] = {}

    def raw_read() -> None:
        spark.read.format("sow").option("path", store).option("topic", "orders").load()

    result["raw_read"] = _caught(raw_read)
    result["read"] = _caught(lambda: sow.read(spark, store, "orders"))
    result["check_workers"] = _caught(lambda: sow.check_workers(spark))
    df = spark.createDataFrame([(1, 2.5), (2, 3.5)], "id long, price double")
    result["write_sharded"] = _caught(
        lambda: sow.write_sharded(
            df, os.path.join(out, "sharded"), "orders", shards=2, keys=["/id"]
        )
    )
    price = sow.lookup_udf(store, "orders", {"price": "double"})
    batch = df.withColumn("known", price(F.col("id")).getField("price"))
    sink = sow.SowSink(os.path.join(out, "sink"), "orders", keys=["/id"])
    result["sink"] = _caught(lambda: sink(batch, 0))
    result["sink_last_batch"] = sink.last_batch_id
    sink.close()
    sow.register(spark)  # the source now resolves; creating it on a worker fails
    result["registered_read"] = _caught(lambda: sow.read(spark, store, "orders"))
    result["write"] = _caught(lambda: sow.write(df, store, "orders"))
    spark.stop()
    return result


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    print(json.dumps(main(sys.argv[2], sys.argv[3])))
