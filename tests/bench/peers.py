"""The peers sowlib is measured against: sqlite3, DuckDB, lmdb, a dict floor, diskcache.

Each peer stores the same JSON order messages keyed by orderId, using its fastest
honest API (one transaction per batch, C-level JSON where the peer has it). Imports
nothing from sowlib.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import diskcache
import duckdb
import lmdb
import orjson
import pyarrow as pa

__all__ = ["DictFloor", "DiskcachePeer", "DuckdbPeer", "LmdbPeer", "SqlitePeer", "json_path"]

_UPSERT = (
    "INSERT INTO orders(k, doc) VALUES (json_extract(?1, '$.orderId'), ?1)"
    " ON CONFLICT(k) DO UPDATE SET doc = excluded.doc"
)


def json_path(path: str) -> str:
    """``"/order/price"`` -> ``"$.order.price"`` (for json_extract)."""
    return "$" + path.replace("/", ".")


class SqlitePeer:
    """A sqlite3 table ``orders(k INTEGER PRIMARY KEY, doc TEXT)`` in WAL mode.

    ``synchronous=NORMAL`` (no fsync per commit) matches sowlib, whose publishes
    survive a process kill but need ``flush()`` to survive power loss. The key is
    taken from the message by ``json_extract`` inside the INSERT (C, no Python parse).
    """

    def __init__(self, path: str, *, expression_indexes: Sequence[str] = ()) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS orders(k INTEGER PRIMARY KEY, doc TEXT)")
        for field in expression_indexes:
            self.add_expression_index(field)

    def add_expression_index(self, field: str) -> None:
        """``CREATE INDEX`` on ``json_extract(doc, '$.field')`` for ``/field``."""
        name = "ix_" + field.strip("/").replace("/", "_")
        self.conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON orders(json_extract(doc, '{json_path(field)}'))"
        )

    def publish_many(self, messages: Iterable[bytes]) -> None:
        """Upsert every message with one ``executemany`` in one transaction."""
        self.conn.execute("BEGIN")
        self.conn.executemany(_UPSERT, [(m.decode(),) for m in messages])
        self.conn.execute("COMMIT")

    def publish_each(self, messages: Iterable[bytes]) -> None:
        """One ``execute`` per message, all in one transaction."""
        execute = self.conn.execute
        execute("BEGIN")
        for m in messages:
            execute(_UPSERT, (m.decode(),))
        execute("COMMIT")

    def get(self, key: int) -> Any:
        """The document text stored under ``key``, or None."""
        row = self.conn.execute("SELECT doc FROM orders WHERE k = ?", (key,)).fetchone()
        return row[0] if row else None

    def query(self, where: str, params: Sequence[Any] = (), *, tail: str = "") -> list[Any]:
        """``SELECT doc FROM orders WHERE <where> <tail>``; every row fetched."""
        sql = f"SELECT doc FROM orders WHERE {where} {tail}"
        return self.conn.execute(sql, params).fetchall()

    def count(self) -> int:
        """Number of rows."""
        return int(self.conn.execute("SELECT count(*) FROM orders").fetchone()[0])

    def reopen(self) -> None:
        """Close and open the database file again (for the first query after open)."""
        path = self.conn.execute("PRAGMA database_list").fetchone()[2]
        self.conn.close()
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class DictFloor:
    """The floor: ``json.loads`` each message and keep it in a dict by orderId."""

    def __init__(self, loads: Callable[[bytes], Any] = json.loads) -> None:
        self.data: dict[Any, bytes] = {}
        self.loads = loads

    def publish_many(self, messages: Iterable[bytes]) -> None:
        """Parse each message (``json.loads`` unless told) and store it."""
        data = self.data
        loads = self.loads
        for m in messages:
            data[loads(m)["orderId"]] = m

    def get(self, key: int) -> bytes | None:
        """The stored message, or None."""
        return self.data.get(key)


class DiskcachePeer:
    """``diskcache.Cache``; ``set`` per message inside one ``transact()``."""

    def __init__(self, directory: str) -> None:
        self.cache = diskcache.Cache(directory)

    def publish_many(self, messages: Iterable[bytes]) -> None:
        """Parse the key with orjson, ``set`` every message in one transaction."""
        cache = self.cache
        with cache.transact():
            for m in messages:
                cache.set(orjson.loads(m)["orderId"], m)

    def get(self, key: int) -> Any:
        """The stored message, or None."""
        return self.cache.get(key)

    def close(self) -> None:
        """Close the cache."""
        self.cache.close()


class LmdbPeer:
    """An lmdb environment; ``putmulti`` of every message in one write transaction."""

    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.env = lmdb.open(directory, map_size=1 << 32, sync=False, metasync=False)

    def publish_many(self, messages: Iterable[bytes]) -> None:
        """Parse the key with orjson and ``putmulti`` in one transaction."""
        items = [(b"%d" % orjson.loads(m)["orderId"], m) for m in messages]
        with self.env.begin(write=True) as txn:
            txn.cursor().putmulti(items)

    def get(self, key: int) -> bytes | None:
        """The stored message, or None."""
        with self.env.begin() as txn:
            value = txn.get(b"%d" % key)
        return None if value is None else bytes(value)

    def get_batch(self, keys: Iterable[int]) -> list[bytes | None]:
        """Each key's message, read in one read transaction (its fastest honest way).

        Without ``buffers=True`` lmdb copies each value into a new ``bytes``: the value is
        read, as sowlib's ``rec.data`` is.
        """
        with self.env.begin() as txn:
            get = txn.get
            return [get(b"%d" % k) for k in keys]

    def close(self) -> None:
        """Close the environment."""
        self.env.close()


class DuckdbPeer:
    """A DuckDB table ``orders(k BIGINT PRIMARY KEY, doc VARCHAR, <columns>)``.

    The document stays VARCHAR (what queries return, fetched into Python); ``columns``
    are the fields a DuckDB user would extract at load time to filter on, typed.
    Without columns, filters go through ``json_extract``. Written from Arrow tables:
    ``INSERT OR REPLACE`` keeping the last message per key within a batch, or a plain
    ``INSERT`` for a bulk load of new keys (DuckDB's ``executemany`` runs one statement
    per row: about 60 times slower here).
    """

    def __init__(self, path: str, columns: Sequence[tuple[str, str]] = ()) -> None:
        self.conn = duckdb.connect(path)
        self.path = path
        self.columns = tuple(columns)
        extra = "".join(f", {name} {kind}" for name, kind in self.columns)
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS orders(k BIGINT PRIMARY KEY, doc VARCHAR{extra})"
        )

    def publish_many(self, messages: Iterable[bytes]) -> None:
        """Parse each message with orjson, upsert the batch from an Arrow table."""
        latest = {}
        for m in messages:
            latest[orjson.loads(m)["orderId"]] = m
        self._insert(list(latest.values()), "INSERT OR REPLACE")

    def load(self, messages: Sequence[bytes]) -> None:
        """Insert messages of distinct new keys (a bulk load: no conflict handling)."""
        self._insert(messages, "INSERT")

    def _insert(self, messages: Sequence[bytes], verb: str) -> None:
        parsed = [orjson.loads(m) for m in messages]
        data: dict[str, list[Any]] = {
            "k": [d["orderId"] for d in parsed],
            "doc": [m.decode() for m in messages],
        }
        for name, _ in self.columns:
            data[name] = [d.get(name) for d in parsed]
        batch = pa.table(data)  # noqa: F841  (read by name in the statement below)
        self.conn.execute(f"{verb} INTO orders SELECT * FROM batch")

    def query(self, where: str, params: Sequence[Any] = (), *, tail: str = "") -> list[Any]:
        """``SELECT doc FROM orders WHERE <where> <tail>``; every row fetched."""
        return self.conn.execute(f"SELECT doc FROM orders WHERE {where} {tail}", params).fetchall()

    def count(self) -> int:
        """Number of rows."""
        return int(self.conn.execute("SELECT count(*) FROM orders").fetchone()[0])  # type: ignore[index]

    def reopen(self) -> None:
        """Close and open the database file again (for the first query after open)."""
        self.conn.close()
        self.conn = duckdb.connect(self.path)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()
