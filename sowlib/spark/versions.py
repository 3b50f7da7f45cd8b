"""Sharded stores on object storage: immutable pieces, shard versions and store commits.

The layout under a root URL::

    _sharded.json                      topic, keys, shard count (written once)
    _commits/000000000007.json         store version 7: every shard's version, the
                                       last batch id of each sink query
    shard-0003/_versions/000000000012.json
                                       shard version 12: per file, its pieces
    shard-0003/data/<ms>-<uuid>-<file> immutable pieces (bytes of a local file)

A shard's files are a SOW store directory. A log file (``*.sow``) is append-only
within a generation, so a new shard version lists the pieces of the previous one
plus one piece holding the log's new records (its bytes from the old end to the
new one); a compacted log (a new file) is uploaded whole, as a new base. Other
files (the checkpoint beside a log) are uploaded whole when they change.
Version files and commits are created with :func:`~.remote.put_if_absent`, so two
writers of one version cannot both win (:class:`~.remote.ShardConflictError`), and
a reader, which only follows commits, never sees a half-written shard.

Executors work on local copies: :meth:`ShardedStore.checkout` builds a shard
version in a local cache directory (``spark.local.dir``), from the newest cached
version it extends when it can. Imports fsspec, xxhash, ``sowlib.store``,
``sowlib.store_files``, ``sowlib.errors`` and ``.remote``; never pyspark.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import xxhash

from sowlib.errors import ConfigError, StoreNotFoundError
from sowlib.spark.remote import (
    ShardConflictError,
    download,
    filesystem,
    join,
    listing,
    put_if_absent,
    read_json,
)
from sowlib.store import SowStore
from sowlib.store_files import SUFFIX

__all__ = [
    "KEEP_CACHED",
    "LAYOUT",
    "Commit",
    "ShardedStore",
    "cache_root",
    "evict",
    "shard_name",
    "write_json",
]

#: The ``layout`` value of ``_sharded.json`` for a store of versioned pieces.
LAYOUT = "versioned"
META = "_sharded.json"
_COMMITS = "_commits"
_VERSIONS = "_versions"
_DATA = "data"
_NUMBER = re.compile(r"(\d{12})\.json\Z")
#: Local versions of one shard kept in an executor's cache.
KEEP_CACHED = 3
_SKIP = frozenset({"LOCK"})


def shard_name(index: int) -> str:
    """The folder name of shard ``index``: ``shard-0003``."""
    return f"shard-{index:04d}"


def _number(n: int) -> str:
    return f"{n:012d}.json"


def cache_root(given: str | os.PathLike[str] | None, root: str) -> str:
    """The local cache folder of the store ``root`` on this machine.

    ``given``, else ``$SOWLIB_CACHE_DIR``, else the first of Spark's local
    directories (``$SPARK_LOCAL_DIRS``, which Spark sets for its Python workers
    from ``spark.local.dir``), else the system's temporary directory; then a
    folder named by a hash of the root URL.
    """
    base = os.fspath(given) if given is not None else os.environ.get("SOWLIB_CACHE_DIR")
    if not base:
        dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d]
        base = dirs[0] if dirs else tempfile.gettempdir()
    return os.path.join(base, "sowlib-shards", xxhash.xxh64_hexdigest(root.encode("utf-8")))


@attrs.frozen
class Commit:
    """One store version: each shard's version (0: empty) and each query's last batch."""

    version: int
    shards: tuple[int, ...]
    batches: Mapping[str, int]
    time: float

    def last_batch(self, query: str) -> int | None:
        """The id of the last batch committed by sink query ``query``, or None."""
        return self.batches.get(query)


class ShardedStore:
    """A sharded store at a root URL (``s3://bucket/orders``, ``file:///data/x``...).

    Args:
        root: the store's URL.
        storage_options: fsspec options of the filesystem (e.g. ``{"anon": False}``).
        cache_dir: where shard copies are kept on this machine (:func:`cache_root`).
    Raises:
        StoreNotFoundError: no sharded store at ``root``.
        ConfigError: an unknown URL scheme, or the root holds another layout.
    """

    def __init__(
        self,
        root: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.root = root
        self.storage_options = dict(storage_options or {})
        self.cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self.fs, self.base = filesystem(root, self.storage_options)
        try:
            meta = read_json(self.fs, join(self.base, META))
        except FileNotFoundError:
            raise StoreNotFoundError(root) from None
        if not isinstance(meta, dict) or meta.get("layout") != LAYOUT:
            raise ConfigError(root, f"{META} does not describe a {LAYOUT} sharded store")
        self.shards: int = int(meta["shards"])
        self.topic: str = str(meta["topic"])
        self.keys: list[str] = list(meta["keys"])
        self.message_type: str = str(meta["message_type"])
        self.create_kwargs: dict[str, Any] = dict(meta.get("create_kwargs") or {})

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen, (self.root, self.storage_options, self.cache_dir))

    def __repr__(self) -> str:
        return f"ShardedStore({self.root!r}, shards={self.shards}, topic={self.topic!r})"

    @classmethod
    def create(
        cls,
        root: str,
        topic: str,
        *,
        shards: int,
        keys: Sequence[str],
        message_type: str = "json",
        create_kwargs: Mapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> ShardedStore:
        """Create an empty sharded store at ``root`` (store version 0, every shard empty).

        Raises:
            ConfigError: a bad shard count or keys, or ``root`` already holds a store.
        """
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise ConfigError("shards", f"{shards!r} is not a positive shard count")
        if not keys:
            raise ConfigError("keys", "a sharded topic needs key fields")
        fs, base = filesystem(root, storage_options)
        meta = {
            "layout": LAYOUT,
            "shards": shards,
            "topic": topic,
            "keys": list(keys),
            "message_type": message_type,
            "create_kwargs": dict(create_kwargs or {}),
        }
        fs.makedirs(base, exist_ok=True)
        if not put_if_absent(fs, join(base, META), json.dumps(meta).encode()):
            raise ConfigError(root, "already holds a sharded store")
        first = {"version": 0, "shards": [0] * shards, "batches": {}, "time": time.time()}
        put_if_absent(fs, join(base, _COMMITS, _number(0)), json.dumps(first).encode())
        return cls(root, storage_options=storage_options, cache_dir=cache_dir)

    # -- commits ---------------------------------------------------------------

    def latest(self) -> Commit:
        """The newest store version (one listing and one read)."""
        numbers = [
            int(m.group(1)) for n in listing(self.fs, self._commits()) if (m := _NUMBER.match(n))
        ]
        if not numbers:
            raise StoreNotFoundError(self.root)
        return self.commit_at(max(numbers))

    def commit_at(self, version: int) -> Commit:
        """Store version ``version``.

        Raises:
            StoreNotFoundError: that version does not exist (or was vacuumed).
        """
        try:
            doc = read_json(self.fs, join(self._commits(), _number(version)))
        except FileNotFoundError:
            raise StoreNotFoundError(f"{self.root} version {version}") from None
        return Commit(
            int(doc["version"]),
            tuple(int(v) for v in doc["shards"]),
            {str(k): int(v) for k, v in dict(doc["batches"]).items()},
            float(doc["time"]),
        )

    def commit(
        self, updates: Mapping[int, int], *, base: Commit, batch: tuple[str, int] | None = None
    ) -> Commit:
        """Write store version ``base.version + 1``: ``base`` with the shard versions
        ``updates`` (shard -> version) and, with ``batch=(query, id)``, that batch.

        Raises:
            ShardConflictError: another writer wrote that store version first (this
                one changed nothing; its shard versions stay unreferenced).
        """
        shards = list(base.shards)
        for shard, version in updates.items():
            shards[shard] = version
        batches = dict(base.batches)
        if batch is not None:
            batches[batch[0]] = batch[1]
        version = base.version + 1
        now = time.time()
        doc = {"version": version, "shards": shards, "batches": batches, "time": now}
        if not put_if_absent(
            self.fs, join(self._commits(), _number(version)), json.dumps(doc).encode()
        ):
            raise ShardConflictError(self.root, f"store version {version}")
        return Commit(version, tuple(shards), batches, now)

    def shard_doc(self, shard: int, version: int) -> dict[str, Any]:
        """The description of shard version ``version`` (version 0: no files)."""
        if version == 0:
            return {"shard": shard, "version": 0, "base": None, "tag": None, "files": {}}
        doc = read_json(self.fs, join(self._shard(shard), _VERSIONS, _number(version)))
        assert isinstance(doc, dict)
        return doc

    # -- local copies ------------------------------------------------------------

    def cache(self) -> str:
        """This machine's cache folder for the store."""
        return cache_root(self.cache_dir, self.root)

    def checkout(self, shard: int, version: int | None = None) -> str:
        """A local read-only copy of ``shard`` at ``version`` (default: the latest
        commit's); built once per machine and version, extending the newest older
        cached copy when its files are a prefix. Do not write into it.
        """
        self.check_shard(shard)
        if version is None:
            version = self.latest().shards[shard]
        folder = os.path.join(self.cache(), shard_name(shard))
        target = os.path.join(folder, f"v{version:012d}")
        if os.path.isdir(target):
            return target
        doc = self.shard_doc(shard, version)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".tmp-{uuid.uuid4().hex}")
        os.makedirs(tmp)
        try:
            prior = _prior(folder, version)
            for name, entry in doc["files"].items():
                self._build_file(os.path.join(tmp, name), entry, prior, name)
            write_json(target + ".json", doc)
            try:
                os.rename(tmp, target)
            except OSError:
                if not os.path.isdir(target):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        evict(folder)
        return target

    def _build_file(
        self,
        out_path: str,
        entry: Mapping[str, Any],
        prior: tuple[str, dict[str, Any]] | None,
        name: str,
    ) -> None:
        """Build one file of a checkout, reusing the newest older cached copy.

        A log whose pieces start with the older copy's pieces gets that copy's
        bytes (up to its recorded size; a writer's copy holds zeros after it) and
        only the new pieces are downloaded. A checkpoint whose description did not
        change is copied as it is: a cached one may be newer than the uploaded one,
        which is as valid (the log is append-only within a generation).
        """
        pieces = [tuple(p) for p in entry["pieces"]]
        done = 0
        with open(out_path, "wb") as out:
            if prior is not None:
                old = prior[1]["files"].get(name)
                old_pieces = [tuple(p) for p in old["pieces"]] if old else []
                local = os.path.join(prior[0], name)
                reuse = old_pieces and pieces[: len(old_pieces)] == old_pieces
                if reuse and os.path.isfile(local) and name.endswith(SUFFIX):
                    _copy_prefix(local, out, int(old["size"]))
                    done = len(old_pieces)
                elif reuse and os.path.isfile(local) and old_pieces == pieces:
                    _copy_prefix(local, out, os.path.getsize(local))
                    done = len(pieces)
            for obj, _size in pieces[done:]:
                download(self.fs, self._piece(str(obj)), out)

    def open_shard(self, shard: int, version: int | None = None) -> SowStore:
        """Shard ``shard`` at ``version`` (default: latest), opened read-only locally."""
        return SowStore(self.checkout(shard, version), readonly=True)

    # -- housekeeping ------------------------------------------------------------

    def vacuum(self, retention: float) -> dict[str, int]:
        """Remove what no store version newer than ``retention`` seconds refers to.

        The latest store version is always kept, with every shard version and piece
        it refers to; older store versions, unreferenced shard versions (also those
        of writers that lost a race or never committed) and pieces are removed once
        older than ``retention``. Readers of a removed version fail; give readers
        longer than their longest read. Returns the counts removed.

        Raises:
            ConfigError: a negative retention.
        """
        if retention < 0:
            raise ConfigError("retention", f"{retention!r} is not a number of seconds")
        cutoff = time.time() - retention
        latest = self.latest()
        removed = {"commits": 0, "shard_versions": 0, "pieces": 0}
        kept: set[tuple[int, int]] = set()
        for name in listing(self.fs, self._commits()):
            if not (m := _NUMBER.match(name)):
                continue
            commit = self.commit_at(int(m.group(1)))
            if commit.version == latest.version or commit.time >= cutoff:
                kept.update(enumerate(commit.shards))
            else:
                self.fs.rm_file(join(self._commits(), name))
                removed["commits"] += 1
        for shard in range(self.shards):
            used: set[str] = set()
            folder = join(self._shard(shard), _VERSIONS)
            for name in listing(self.fs, folder):
                if not (m := _NUMBER.match(name)):
                    continue
                doc = self.shard_doc(shard, int(m.group(1)))
                if (shard, int(doc["version"])) in kept or float(doc["time"]) >= cutoff:
                    used.update(str(p[0]) for f in doc["files"].values() for p in f["pieces"])
                else:
                    self.fs.rm_file(join(folder, name))
                    removed["shard_versions"] += 1
            data = join(self._shard(shard), _DATA)
            for name in listing(self.fs, data):
                stamp = name.partition("-")[0]
                if f"{shard_name(shard)}/{_DATA}/{name}" in used or not stamp.isdigit():
                    continue
                if int(stamp) / 1000 < cutoff:
                    self.fs.rm_file(join(data, name))
                    removed["pieces"] += 1
        return removed

    # -- paths ---------------------------------------------------------------------

    def _commits(self) -> str:
        return join(self.base, _COMMITS)

    def _shard(self, shard: int) -> str:
        return join(self.base, shard_name(shard))

    def _piece(self, relative: str) -> str:
        return join(self.base, relative)

    def check_shard(self, shard: int) -> None:
        """Raise ConfigError unless ``shard`` is a shard number of this store."""
        if not 0 <= shard < self.shards:
            raise ConfigError(
                "shard", f"{shard!r} is not a shard of {self.root} (0..{self.shards - 1})"
            )

    def piece_path(self, shard: int, file: str) -> str:
        """A new piece name (relative to the root) for ``file`` of ``shard``."""
        stamp = int(time.time() * 1000)
        return f"{shard_name(shard)}/{_DATA}/{stamp:013d}-{uuid.uuid4().hex}-{file}"

    def version_path(self, shard: int, version: int) -> str:
        """The path of shard version ``version``'s description."""
        return join(self._shard(shard), _VERSIONS, _number(version))


def _reopen(root: str, options: dict[str, Any], cache_dir: str | None) -> ShardedStore:
    return ShardedStore(root, storage_options=options, cache_dir=cache_dir)


def _prior(folder: str, version: int) -> tuple[str, dict[str, Any]] | None:
    """The newest cached copy below ``version`` and its description, if any."""
    best = None
    for name in os.listdir(folder):
        older = name.startswith("v") and name[1:].isdigit() and int(name[1:]) < version
        if older and (best is None or int(name[1:]) > int(best[1:])):
            best = name
    if best is None:
        return None
    try:
        with open(os.path.join(folder, best + ".json"), encoding="utf-8") as fh:
            return os.path.join(folder, best), json.load(fh)
    except (OSError, ValueError):
        return None


def evict(folder: str) -> None:
    """Remove all but the :data:`KEEP_CACHED` newest cached versions."""
    versions = sorted(n for n in os.listdir(folder) if n.startswith("v") and n[1:].isdigit())
    for name in versions[:-KEEP_CACHED]:
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        with contextlib.suppress(OSError):  # a version cached without its description
            os.unlink(os.path.join(folder, name + ".json"))


def _copy_prefix(local: str, out: Any, size: int) -> None:
    with open(local, "rb") as src:
        left = size
        while left:
            chunk = src.read(min(left, 8 << 20))
            if not chunk:
                raise OSError(f"{local} is shorter than {size} bytes")
            out.write(chunk)
            left -= len(chunk)


def write_json(path: str, doc: Mapping[str, Any]) -> None:
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    os.replace(tmp, path)
