"""A Spark job that never imports sowlib: run by ``test_default_source.py`` in a fresh process.

Usage: ``python default_source_job.py STORE_DIR``. The session has Spark's default
settings (filter pushdown into Python data sources off), so ``format("sow")`` only
works through the installed ``pyspark_sowlib`` module. Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def _ids(df: Any) -> list[int]:
    return sorted(int(r["orderId"]) for r in df.collect())


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def main(path: str) -> dict[str, Any]:
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out: dict[str, Any] = {
        "pushdown_default": spark.conf.get("spark.sql.python.filterPushdown.enabled")
    }

    def load(**options: str) -> Any:
        reader = spark.read.format("sow").option("path", path).option("topic", "orders")
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    where = load().where((F.col("price") > 100) & (F.col("region") == "EU"))
    out["off_where"] = _ids(where)
    out["off_where_plan"] = _plan(where)
    out["off_filter"] = _ids(load(filter="/price > 100"))
    out["off_both"] = _ids(load(filter="/price > 100").where(F.col("region") == "APAC"))
    new = spark.createDataFrame([(9, 99.5, "US")], "orderId long, price double, region string")
    new.write.format("sow").option("path", path).option("topic", "orders").mode("append").save()
    out["after_write"] = _ids(load())

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    where = load().where((F.col("price") > 100) & (F.col("region") == "EU"))
    out["on_where"] = _ids(where)
    out["on_where_plan"] = _plan(where)
    out["on_filter"] = _ids(load(filter="/price > 100").where(F.col("region") == "APAC"))
    out["sowlib_in_driver"] = any(m == "sowlib" or m.startswith("sowlib.") for m in sys.modules)

    # an explicit register in a session that already found the installed module
    from sowlib.spark import register

    register(spark)
    out["after_register"] = _ids(load(filter="/region = 'EU'"))
    spark.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
