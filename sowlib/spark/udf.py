"""Lookups from Spark: enrich rows with the latest record per key from a read-only SOW store.

Workers open the store by path through the per-process cache in ``_handles`` (refreshed,
never reopened per row). Imports pyspark, pandas, ``sowlib.store`` and the
``sowlib.spark`` helpers; never ``storage``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from math import isfinite
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.functions import pandas_udf

from sowlib.errors import ConfigError
from sowlib.paths import parse_path
from sowlib.spark import handles
from sowlib.spark.batches import convert_column
from sowlib.spark.datasource import spark_type
from sowlib.spark.remote import is_url
from sowlib.spark.routing import shard_of
from sowlib.store import SowStore
from sowlib.topic import Topic

__all__ = ["lookup_map_in_pandas", "lookup_udf"]

_SAMPLE = 1_000
#: Key value types hashed directly (their canonical text is what a document's gives).
_PLAIN_KEYS = frozenset({str, int, float, bool})
#: Seconds a worker's store handle stays fresh before it reads the writer's new tail.
REFRESH_SECONDS = 1.0
#: A shard version's local copy never changes: its handle is never refreshed.
_IMMUTABLE = float("inf")


def _field_types(
    path: str, topic: str, message_type: str, fields: Sequence[str] | Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """Field names and Spark DDL types: given, or inferred from a sample of the topic."""
    if isinstance(fields, Mapping):
        names, types = [n.lstrip("/") for n in fields], list(fields.values())
    else:
        names = [n.lstrip("/") for n in fields]
        with SowStore(path, readonly=True) as store:
            docs = [r.doc for r in store.topic(topic, message_type).sow(top_n=_SAMPLE)]
        types = [spark_type([d.get(n) for d in docs if isinstance(d, dict)]) for n in names]
    if not names:
        raise ConfigError("fields", "name at least one field to look up")
    if len(set(names)) != len(names):
        raise ConfigError("fields", f"{names!r} names a field twice")
    return names, types


def _struct(ddl: str) -> T.StructType:
    parsed = T.StructType.fromDDL(ddl)
    assert isinstance(parsed, T.StructType)
    return parsed


def _key_paths(
    path: str, topic: str, message_type: str, key_fields: Sequence[str] | None
) -> list[str]:
    if key_fields is not None:
        out = list(key_fields)
    else:
        with SowStore(path, readonly=True) as store:
            out = list(store.topic(topic, message_type).config.keys)
    if not out:
        raise ConfigError("key_fields", f"topic {topic!r} has no key fields; pass key_fields")
    return out


def key_document_builder(paths: Sequence[str]) -> Any:
    """A function building the document a key generator needs from key values."""
    steps = [parse_path(p).names for p in paths]

    def build(values: Sequence[Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for names, value in zip(steps, values, strict=True):
            node = doc
            for name in names[:-1]:
                node = node.setdefault(name, {})
            node[names[-1]] = value
        return doc

    return build


def lookup_columns(
    topic: Topic,
    paths: Sequence[str],
    keys: Iterator[Sequence[Any]],
    names: list[str],
    kinds: list[Any],
) -> dict[str, list[Any]]:
    """Each of the ``names`` fields of the record under each key, converted to its
    ``kinds`` type (NULL when the key has no record); one list per field.

    ``keys`` holds the values of the key fields ``paths``, in that order. A key seen
    earlier in the same call reuses its document. When ``paths`` are the topic's own
    key fields in their order, text and number values are hashed directly; otherwise
    (and for other values) the key is that of the document the values make.
    """
    build = key_document_builder(paths)
    own = [parse_path(p) for p in topic.config.keys]
    direct = [parse_path(p) for p in paths] == own
    docs: list[Mapping[str, Any]] = []
    add = docs.append
    seen: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for values in keys:
        probe = tuple(values)
        try:
            doc = seen.get(probe)
        except TypeError:  # an unhashable value (a list from an array column)
            doc, probe = None, ()
        if doc is None:
            doc = _lookup_doc(topic, build, probe or tuple(values), direct)
            if probe:
                seen[probe] = doc
        add(doc)
    return {
        name: convert_column([d.get(name) for d in docs], kind)
        for name, kind in zip(names, kinds, strict=True)
    }


def _lookup_doc(
    topic: Topic, build: Any, values: tuple[Any, ...], direct: bool
) -> Mapping[str, Any]:
    """The document of the record under the key ``values`` make, ``{}`` when none.

    A NULL value (None, ``pd.NA``, NaN: pandas' NULL in a float column) has no record,
    nor has an infinity (a JSON document cannot hold one).
    """
    if any(v is None or v is pd.NA or (type(v) is float and not isfinite(v)) for v in values):
        return {}
    try:
        key = None
        if direct and set(map(type, values)) <= _PLAIN_KEYS:
            key = topic.key_for_values(values)
        rec = topic.get(key if key is not None else topic.key_for(build(values)))
    except ValueError:  # a key value the key generator rejects: no record
        return {}
    return rec.doc if rec is not None and isinstance(rec.doc, dict) else {}


def lookup_udf(
    path: str | os.PathLike[str],
    topic: str,
    fields: Sequence[str] | Mapping[str, str],
    key_fields: Sequence[str] | None = None,
    *,
    message_type: str = "json",
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """A pandas UDF: key columns in, a struct of the latest record's ``fields`` out.

    ``udf(col_a, col_b)`` takes one column per key field (in ``key_fields`` order)
    and returns ``struct<field: type, ...>``; a key with no record gives a struct of
    NULLs. Each worker process keeps one read-only handle per store (refreshed at
    most every :data:`REFRESH_SECONDS`), so a lookup is one dict probe; O(1) per row.

    A URL ``path`` is a versioned sharded store (:mod:`sowlib.spark.versions`): each
    key is looked up in its shard (:func:`~sowlib.spark.routing.shard_of`), in a local
    copy at the latest commit's version, read again at most every
    :data:`REFRESH_SECONDS`; ``key_fields`` must then be the store's keys.

    Args:
        path: the store directory (opened read-only in the driver, then in workers),
            or a sharded store's URL.
        topic: the topic to look up.
        fields: top-level field names (types inferred from a sample of the topic) or a
            mapping ``{name: "DDL type"}``.
        key_fields: the paths the key columns fill (default: the topic's key fields).
        message_type: the topic's message type.
        storage_options: fsspec options for a URL ``path``.
    Returns:
        A Spark UDF (call it with Columns).
    Raises:
        ConfigError: no fields, or no key fields. UnknownTopicError: no such topic.

    Example:
        >>> price = lookup_udf("var/sow", "orders", {"price": "double"})  # doctest: +SKIP
        >>> df.withColumn("o", price("orderId")).select("o.price")  # doctest: +SKIP
    """
    if is_url(path):
        return _sharded_lookup_udf(os.fspath(path), topic, fields, key_fields, storage_options)
    root = os.path.abspath(os.fspath(path))
    names, types = _field_types(root, topic, message_type, fields)
    paths = _key_paths(root, topic, message_type, key_fields)
    schema = _struct(", ".join(f"`{n}` {t}" for n, t in zip(names, types, strict=True)))
    kinds = [f.dataType for f in schema.fields]

    def lookup(*cols: pd.Series) -> pd.DataFrame:
        store = handles.reader(root, max_age=REFRESH_SECONDS)
        t = store.topic(topic, message_type)
        keys = zip(*(c.tolist() for c in cols), strict=True)
        return pd.DataFrame(lookup_columns(t, paths, keys, names, kinds), dtype=object)

    return pandas_udf(lookup, returnType=schema)  # type: ignore[call-overload]


def _sharded_lookup_udf(
    root: str,
    topic: str,
    fields: Sequence[str] | Mapping[str, str],
    key_fields: Sequence[str] | None,
    storage_options: Mapping[str, str] | None,
) -> Any:
    storage = dict(storage_options or {})
    store, commit = handles.latest(root, storage)
    if topic != store.topic:
        raise ConfigError("topic", f"{root} holds topic {store.topic!r}, not {topic!r}")
    paths = list(key_fields) if key_fields is not None else list(store.keys)
    if [parse_path(p) for p in paths] != [parse_path(k) for k in store.keys]:
        raise ConfigError("key_fields", f"a sharded lookup takes the store's keys {store.keys!r}")
    first = next((i for i, v in enumerate(commit.shards) if v), 0)  # a shard with data
    sample = store.checkout(first, commit.shards[first])
    names, types = _field_types(sample, topic, store.message_type, fields)
    schema = _struct(", ".join(f"`{n}` {t}" for n, t in zip(names, types, strict=True)))
    kinds = [f.dataType for f in schema.fields]

    def lookup(*cols: pd.Series) -> pd.DataFrame:
        owner, latest = handles.latest(root, storage, max_age=REFRESH_SECONDS)
        keys = list(zip(*(c.tolist() for c in cols), strict=True))
        groups: dict[int, list[int]] = {}
        for row, values in enumerate(keys):
            groups.setdefault(shard_of(values, owner.shards), []).append(row)
        out: dict[str, list[Any]] = {n: [None] * len(keys) for n in names}
        for shard, rows in groups.items():
            local = owner.checkout(shard, latest.shards[shard])
            try:
                t = handles.reader(local, max_age=_IMMUTABLE).topic(topic, owner.message_type)
            except KeyError:  # an empty shard: no records
                continue
            found = lookup_columns(t, paths, (keys[r] for r in rows), names, kinds)
            for name, got in found.items():
                column = out[name]
                for r, value in zip(rows, got, strict=True):
                    column[r] = value
        return pd.DataFrame(out, dtype=object)

    return pandas_udf(lookup, returnType=schema)  # type: ignore[call-overload]


def lookup_map_in_pandas(
    df: DataFrame,
    path: str | os.PathLike[str],
    topic: str,
    key_cols: Sequence[str],
    fields: Sequence[str] | Mapping[str, str],
    *,
    key_fields: Sequence[str] | None = None,
    message_type: str = "json",
) -> DataFrame:
    """``df`` with the looked-up ``fields`` appended as columns (``mapInPandas``).

    Same lookup as :func:`lookup_udf`, but whole Arrow batches at a time and flat
    output columns. ``key_cols`` name the columns of ``df`` holding the key values,
    in key field order.

    Raises:
        ConfigError: a key column is missing, or a field name is already a column.
    """
    root = os.path.abspath(os.fspath(path))
    missing = [c for c in key_cols if c not in df.columns]
    if missing:
        raise ConfigError("key_cols", f"{missing!r} not among the columns {df.columns!r}")
    names, types = _field_types(root, topic, message_type, fields)
    clash = [n for n in names if n in df.columns]
    if clash:
        raise ConfigError("fields", f"{clash!r} are already columns of the DataFrame")
    paths = _key_paths(root, topic, message_type, key_fields)
    extra = _struct(", ".join(f"`{n}` {t}" for n, t in zip(names, types, strict=True)))
    schema = T.StructType([*df.schema.fields, *extra.fields])
    kinds = [f.dataType for f in extra.fields]
    key_list = list(key_cols)

    def enrich(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        store = handles.reader(root, max_age=REFRESH_SECONDS)
        t = store.topic(topic, message_type)
        for batch in batches:
            values = zip(*(batch[c].tolist() for c in key_list), strict=True)
            looked = pd.DataFrame(lookup_columns(t, paths, values, names, kinds), dtype=object)
            yield pd.concat([batch.reset_index(drop=True), looked], axis=1)

    return df.mapInPandas(enrich, schema=schema)
