"""Spark integration (optional extra): filters as Columns, a SOW sink, a ``sow`` data source."""

from sowlib.spark.columns import to_column

__all__ = ["to_column"]
