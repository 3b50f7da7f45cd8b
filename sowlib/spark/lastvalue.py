"""Last value per key in Spark: the SOW rule ("latest message per key wins") as a DataFrame op.

Imports pyspark and ``sowlib.errors`` only; never ``storage`` or ``topic``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sowlib.errors import ConfigError

__all__ = ["last_value"]

_ROW = "__sow_last_row"


def _as_list(value: str | Column | Sequence[str | Column], what: str) -> list[str | Column]:
    items: list[str | Column] = [value] if isinstance(value, (str, Column)) else list(value)
    if not items:
        raise ConfigError(what, "give at least one column")
    return items


def last_value(
    df: DataFrame,
    keys: str | Sequence[str],
    order_by: str | Column | Sequence[str | Column],
) -> DataFrame:
    """The latest row per key: what a SOW topic keeps after publishing every row in order.

    For each distinct ``keys`` tuple, keeps the row with the greatest ``order_by``
    tuple (compared left to right, NULL lowest), computed natively with ``max_by``
    over a struct of the whole row: one shuffle, no Python. Unlike
    ``dropDuplicates``, which keeps an arbitrary row per key, the result does not
    depend on partitioning. Ties on the order tuple keep one of the tied rows.

    Args:
        df: any DataFrame.
        keys: key column name(s); NULL keys form their own group, as in ``groupBy``.
        order_by: column name(s) or Columns giving the publish order (a sequence
            number, a timestamp, ...).
    Returns:
        A DataFrame with the columns of ``df`` (same order and types), one row per key.
    Raises:
        ConfigError: no key or no order column, or a key not in ``df``.

    Example:
        >>> latest = last_value(events, keys=["orderId"], order_by="ts")  # doctest: +SKIP
    """
    key_cols = [str(k) for k in _as_list(keys, "keys")]
    missing = [k for k in key_cols if k not in df.columns]
    if missing:
        raise ConfigError("keys", f"{missing!r} not among the columns {df.columns!r}")
    order = [F.col(c) if isinstance(c, str) else c for c in _as_list(order_by, "order_by")]
    # max_by compares the struct of order values field by field, which is exactly the
    # lexicographic "latest publish wins" rule; coalesce-free because NULL sorts lowest.
    order_struct = F.struct(*[o.alias(f"o{i}") for i, o in enumerate(order)])
    row = F.struct(*[F.col(f"`{c}`") for c in df.columns])
    grouped = df.groupBy(*[F.col(f"`{k}`") for k in key_cols]).agg(
        F.max_by(row, order_struct).alias(_ROW)
    )
    return grouped.select(*[F.col(f"{_ROW}.`{c}`").alias(c) for c in df.columns])
