"""Sharded-sink ingest and shard reads against SowSink on the driver (a script, run once).

Usage: ``python tests/bench/sharded_sink_report.py [--rows 50000] [--batches 5]``
(the first batch warms up and is not timed).
Each mode runs in its own process and SparkSession: ``SowSink`` on the driver of a
``local[2]`` session, and ``ShardedSink`` with 1 and 2 task slots (``local[1]``,
``local[2]``: one slot stands for one executor) over a ``file://`` root on this
disk, 2 shards; then the rows/s of reading every shard back through the ``sow``
source. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCHEMA = "orderId long, price double, region string, qty long"


def _frames(spark: Any, rows: int, batches: int) -> list[Any]:
    out = []
    for b in range(batches):
        data = [(b * rows + i, float(i % 500), f"R{i % 8}", i % 1000) for i in range(rows)]
        out.append(spark.createDataFrame(data, SCHEMA).repartition(4).cache())
    for df in out:
        df.count()
    return out


def run(mode: str, rows: int, batches: int, folder: str) -> dict[str, float]:
    from sowlib.spark import local_session
    from sowlib.spark.shardsink import ShardedSink
    from sowlib.spark.sink import SowSink

    cores = 1 if mode == "sharded-1" else 2
    spark = local_session(cores, conf={"spark.driver.memory": "1g"})
    frames = _frames(spark, rows, batches)
    url = Path(folder, "root").as_uri()
    if mode == "driver":
        sink: Any = SowSink(Path(folder, "single"), "orders", keys=["/orderId"])
    else:
        sink = ShardedSink(
            url, "orders", keys=["/orderId"], shards=2, cache_dir=Path(folder, "cache")
        )
    sink(frames[0], 0)  # warm-up, not timed: Python workers, imports, the first job
    start = time.perf_counter()
    for i, df in enumerate(frames[1:], start=1):
        sink(df, i)
    ingest = rows * (batches - 1) / (time.perf_counter() - start)
    out = {"ingest_rows_s": ingest}
    if mode != "driver":
        start = time.perf_counter()
        count = spark.read.format("sow").option("path", url).option("topic", "orders").load()
        n = count.count()
        out["read_rows_s"] = n / (time.perf_counter() - start)
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--mode")
    parser.add_argument("--folder")
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run(args.mode, args.rows, args.batches, args.folder)))
        return
    results = {}
    for mode in ("driver", "sharded-1", "sharded-2"):
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--mode",
                    mode,
                    "--folder",
                    folder,
                    "--rows",
                    str(args.rows),
                    "--batches",
                    str(args.batches),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{args.batches} batches of {args.rows:,} rows, 2 shards, file:// root")
    print("| mode | ingest rows/s | read rows/s |")
    print("| --- | --- | --- |")
    for mode, got in results.items():
        read = f"{got['read_rows_s']:,.0f}" if "read_rows_s" in got else "-"
        print(f"| {mode} | {got['ingest_rows_s']:,.0f} | {read} |")


if __name__ == "__main__":
    main()
