"""Spark integration (optional extra): filters as Columns, a SOW sink, a ``sow`` data source.

Never imported by ``sowlib/__init__``: ``import sowlib.spark`` needs pyspark.
"""

from sowlib.spark.cloud import download_sharded, upload_sharded
from sowlib.spark.columns import to_column
from sowlib.spark.datasource import SowDataSource, register
from sowlib.spark.lastvalue import last_value
from sowlib.spark.readwrite import read, write
from sowlib.spark.remote import ShardConflictError
from sowlib.spark.session import local_session
from sowlib.spark.shards import open_sharded, shard_of, write_sharded
from sowlib.spark.shardsink import ShardedSink
from sowlib.spark.shardwriter import ShardWriter
from sowlib.spark.sink import SowSink
from sowlib.spark.udf import lookup_map_in_pandas, lookup_udf
from sowlib.spark.versions import ShardedStore
from sowlib.spark.workers import WorkerPython, check_workers

__all__ = [
    "ShardConflictError",
    "ShardWriter",
    "ShardedSink",
    "ShardedStore",
    "SowDataSource",
    "SowSink",
    "WorkerPython",
    "check_workers",
    "download_sharded",
    "last_value",
    "local_session",
    "lookup_map_in_pandas",
    "lookup_udf",
    "open_sharded",
    "read",
    "register",
    "shard_of",
    "to_column",
    "upload_sharded",
    "write",
    "write_sharded",
]
