"""``read`` and ``write``: the ``sow`` data source called with keyword options.

The same as ``spark.read.format("sow")...load()`` and ``df.write.format("sow")...save()``,
except that a Spark set-up problem (sowlib missing on the workers, the data source not
found) raises :class:`~sowlib.errors.SparkSetupError` saying what to do. Imports
pyspark and ``.workers``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sowlib.spark.workers import worker_errors

__all__ = ["read", "write"]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _options(
    path: str | os.PathLike[str] | None, topic: str | None, options: Mapping[str, Any]
) -> dict[str, str]:
    out = {"path": path, "topic": topic, **options}
    return {name: _text(value) for name, value in out.items() if value is not None}


def read(
    spark: SparkSession,
    path: str | os.PathLike[str] | None = None,
    topic: str | None = None,
    **options: Any,
) -> DataFrame:
    """``spark.read.format("sow")`` with ``path``, ``topic`` and ``options`` set, loaded.

    ``options`` are the data source's (``filter``, ``schema``, ``config``,
    ``message_type``, ``pushdown``, ...; ``docs/spark.md``); booleans become
    ``true``/``false``, None leaves an option out.

    Raises:
        SparkSetupError: the workers cannot import sowlib, or Spark finds no ``sow``
            data source (the Spark error is the ``__cause__``).

    Example:
        >>> read(spark, "var/sow", "orders", filter="/price > 100").count()  # doctest: +SKIP
    """
    reader = spark.read.format("sow")
    for name, value in _options(path, topic, options).items():
        reader = reader.option(name, value)
    with worker_errors(spark):
        return reader.load()


def write(
    df: DataFrame,
    path: str | os.PathLike[str] | None = None,
    topic: str | None = None,
    *,
    mode: str = "append",
    **options: Any,
) -> None:
    """``df.write.format("sow")`` with ``path``, ``topic`` and ``options`` set, saved.

    Raises:
        SparkSetupError: as :func:`read`.

    Example:
        >>> write(df, "var/sow", "orders")  # doctest: +SKIP
    """
    writer = df.write.format("sow").mode(mode)
    for name, value in _options(path, topic, options).items():
        writer = writer.option(name, value)
    with worker_errors(df.sparkSession):
        writer.save()
