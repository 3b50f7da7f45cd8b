"""What a user does after the README's set-up: ``format("sow")`` in a plain SparkSession.

Run by ``nox -s readme`` on the README's own install (no ``PYTHONPATH``, no register
call): reads the topic the main job left under ``var/spark_sow`` and checks the
answer against sowlib's. Exit 1 with the reason when they differ.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from sowlib import SowStore

STORE = "var/spark_sow"
FILTER = "/price > 100"


def main() -> int:
    with SowStore(STORE, readonly=True) as store:
        expected = len(store.topic("orders").sow(FILTER))
    spark = SparkSession.builder.master("local[1]").appName("readme").getOrCreate()
    try:
        reader = spark.read.format("sow").option("path", STORE).option("topic", "orders")
        got = reader.option("filter", FILTER).load().count()
    finally:
        spark.stop()
    print(f"plain SparkSession format('sow'): {got} rows, sowlib {expected}")
    return 0 if got == expected and expected > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
