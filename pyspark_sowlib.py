"""Makes ``spark.read.format("sow")`` work in every SparkSession, with no register call.

pyspark 4 imports each installed top-level module whose name starts with ``pyspark_``
at the first data source call of a session and registers its ``DefaultSource``.
Imports ``sowlib.spark.datasource`` only. Without the ``spark`` extra's libraries it
defines nothing, so it never breaks another data source's lookup.
"""

from __future__ import annotations

__all__ = ["DefaultSource"]

_OPTIONAL = frozenset({"pyspark", "pyarrow", "pandas", "orjson"})

try:
    from sowlib.spark.datasource import SowDataSource as DefaultSource
except ModuleNotFoundError as exc:  # sowlib installed without the spark extra
    if (exc.name or "").partition(".")[0] not in _OPTIONAL:
        raise
