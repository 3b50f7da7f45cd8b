"""Spark integration (optional extra): filters as Columns, a SOW sink, a ``sow`` data source.

Never imported by ``sowlib/__init__``: ``import sowlib.spark`` needs pyspark.
"""

from sowlib.spark.columns import to_column
from sowlib.spark.datasource import SowDataSource, register
from sowlib.spark.lastvalue import last_value
from sowlib.spark.session import local_session
from sowlib.spark.shards import open_sharded, shard_of, write_sharded
from sowlib.spark.sink import SowSink
from sowlib.spark.udf import lookup_map_in_pandas, lookup_udf

__all__ = [
    "SowDataSource",
    "SowSink",
    "last_value",
    "local_session",
    "lookup_map_in_pandas",
    "lookup_udf",
    "open_sharded",
    "register",
    "shard_of",
    "to_column",
    "write_sharded",
]
