"""Per-process cache of read-only stores for Spark Python workers (UDFs, data source reads).

Lives in an importable module so the cache survives between tasks of a reused worker.
Imports ``sowlib.store`` and ``.versions`` only; never pyspark.
"""

from __future__ import annotations

import os
import threading
import time

from sowlib.spark.versions import Commit, ShardedStore
from sowlib.store import SowStore

__all__ = ["clear", "latest", "reader"]

_lock = threading.Lock()
_cache: dict[str, tuple[SowStore, float]] = {}
_commits: dict[str, tuple[ShardedStore, Commit, float]] = {}
_owner = os.getpid()


def reader(path: str | os.PathLike[str], *, max_age: float = 0.0) -> SowStore:
    """The read-only store for ``path`` in this process, refreshed when older than ``max_age``.

    The first call opens the store (a full load); later calls return the same
    handle and :meth:`SowStore.refresh` it (reading only the writer's new tail)
    when the last refresh is at least ``max_age`` seconds old. A forked child never
    shares its parent's handles.

    Args:
        path: the store directory.
        max_age: seconds a refresh stays good (0: refresh on every call).
    Returns:
        An open read-only :class:`SowStore`; do not close it (use :func:`clear`).
    Raises:
        FileNotFoundError: no store directory at ``path``.
    """
    global _owner
    key = os.path.abspath(os.fspath(path))
    with _lock:
        if os.getpid() != _owner:  # forked: the parent's mmaps and locks are not ours
            _cache.clear()
            _owner = os.getpid()
        now = time.monotonic()
        found = _cache.get(key)
        if found is not None and not found[0].closed:
            store, stamp = found
            if now - stamp >= max_age:
                store.refresh()
                _cache[key] = (store, now)
            return store
        store = SowStore(key, readonly=True)
        _cache[key] = (store, now)
        return store


def latest(
    root: str, storage_options: dict[str, str] | None = None, *, max_age: float = 0.0
) -> tuple[ShardedStore, Commit]:
    """The versioned sharded store at ``root`` and its latest commit, read again
    when the last read is at least ``max_age`` seconds old (one listing and one
    read of the object store per refresh, per process)."""
    key = f"{root}\x00{sorted((storage_options or {}).items())!r}"
    with _lock:
        now = time.monotonic()
        found = _commits.get(key)
        if found is not None and now - found[2] < max_age:
            return found[0], found[1]
        store = (
            found[0] if found is not None else ShardedStore(root, storage_options=storage_options)
        )
    commit = store.latest()
    with _lock:
        _commits[key] = (store, commit, now)
    return store, commit


def clear() -> None:
    """Close and forget every cached handle of this process."""
    with _lock:
        for store, _ in _cache.values():
            store.close()
        _cache.clear()
        _commits.clear()
