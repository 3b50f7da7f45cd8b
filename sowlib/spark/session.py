"""``local_session``: a local SparkSession set up the way sowlib's Spark parts expect.

For notebooks, examples, tests and benchmarks on one machine. Imports pyspark and
``sowlib.spark.datasource``; nothing else of sowlib.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from sowlib.errors import ConfigError
from sowlib.spark.datasource import register

__all__ = ["local_session"]


def local_session(
    cores: int = 2, *, app_name: str = "sowlib", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Get or create a ``local[cores]`` SparkSession with the ``sow`` data source registered.

    The session keeps the driver on the loopback interface (local Spark talks only to
    itself), turns the UI and console progress off, uses ``cores`` shuffle partitions
    and default parallelism, reuses Python workers, and enables filter pushdown into
    Python data sources (``spark.sql.python.filterPushdown.enabled``), which the
    ``sow`` source needs to push filters. Python workers run this interpreter unless
    ``PYSPARK_PYTHON`` is already set. ``conf`` adds or overrides settings.

    Args:
        cores: local task slots.
        app_name: the Spark application name.
        conf: extra Spark settings, e.g. ``{"spark.driver.memory": "2g"}``.
    Raises:
        ConfigError: ``cores`` is not a positive integer.

    Example:
        >>> spark = local_session(conf={"spark.driver.memory": "1g"})  # doctest: +SKIP
        >>> spark.read.format("sow").option("path", "var/store").option("topic", "orders")
    """
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ConfigError("cores", f"{cores!r} is not a positive number of cores")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.python.worker.reuse": "true",
        "spark.sql.python.filterPushdown.enabled": "true",
        **(conf or {}),
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
