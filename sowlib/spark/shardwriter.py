"""Writing one shard of a versioned sharded store: a local copy, then a new shard version.

Imports ``sowlib.store``, ``sowlib.store_files``, ``.remote`` and ``.versions``; never
pyspark.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sowlib.errors import ConfigError
from sowlib.spark.remote import ShardConflictError, join, put_if_absent, read_json, upload_range
from sowlib.spark.versions import ShardedStore, evict, shard_name, write_json
from sowlib.store import SowStore
from sowlib.store_files import SUFFIX

__all__ = ["ShardWriter"]

_SKIP = frozenset({"LOCK"})


class ShardWriter:
    """A writable local copy of ``shard`` at version ``base``, committed as ``base + 1``.

    :meth:`commit` uploads what changed. ``tag`` names the change (the sharded sink
    uses ``query#batch``): a second commit of version ``base + 1`` with the same tag
    and base adopts the first instead of failing (:attr:`adopted`). ``source``: start
    from this local store directory instead of the shard's files (an upload).

    Use as a context manager: leaving it with an exception discards the copy.
    ``store`` is the writer :class:`SowStore`, ``topic`` the shard's topic (created
    on first write).
    """

    def __init__(
        self,
        owner: ShardedStore,
        shard: int,
        base: int,
        tag: str | None = None,
        *,
        source: str | os.PathLike[str] | None = None,
    ) -> None:
        owner.check_shard(shard)
        self.owner, self.shard, self.base, self.tag = owner, shard, base, tag
        self.previous = owner.shard_doc(shard, base)
        if source is None:
            source = owner.checkout(shard, base)
        elif self.previous["files"]:
            raise ConfigError("source", "a local store replaces only an empty shard (version 0)")
        self.work = os.path.join(owner.cache(), "work", uuid.uuid4().hex)
        shutil.copytree(source, self.work, ignore=shutil.ignore_patterns(*_SKIP))
        self._inodes = {
            n: os.stat(os.path.join(self.work, n)).st_ino for n in os.listdir(self.work)
        }
        self.store = SowStore(self.work)
        try:
            if owner.topic in self.store:
                self.topic = self.store.topic(owner.topic, owner.message_type)
            else:
                self.topic = self.store.create_topic(
                    owner.topic,
                    message_type=owner.message_type,
                    keys=owner.keys,
                    **owner.create_kwargs,
                )
        except BaseException:
            self.discard()
            raise
        self.adopted = False

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None or not self.store.closed:
            self.discard()

    def discard(self) -> None:
        """Close the store and remove the local copy (nothing is committed)."""
        if not self.store.closed:
            self.store.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def commit(self) -> int:
        """Upload the new pieces and write shard version ``base + 1``; returns it.

        Raises:
            ShardConflictError: another writer committed that version first, with
                another tag (or none). The local copy is discarded either way.
        """
        used = {
            os.path.basename(str(t["path"])): int(t["used_bytes"])
            for t in self.store.stats().values()
        }
        self.store.close()
        version = self.base + 1
        try:
            files = self._upload(used)
            doc = {
                "shard": self.shard,
                "version": version,
                "base": self.base,
                "tag": self.tag,
                "time": time.time(),
                "files": files,
            }
            path = self.owner.version_path(self.shard, version)
            if not put_if_absent(self.owner.fs, path, json.dumps(doc).encode()):
                held = read_json(self.owner.fs, path)
                if self.tag is None or held.get("tag") != self.tag or held.get("base") != self.base:
                    raise ShardConflictError(
                        self.owner.root,
                        f"{shard_name(self.shard)} version {version}",
                        held.get("tag"),
                    )
                self.adopted = True  # this change was committed by an earlier attempt
                return version
            self._keep(version, doc)
            return version
        finally:
            shutil.rmtree(self.work, ignore_errors=True)

    def _keep(self, version: int, doc: dict[str, Any]) -> None:
        """Make the working copy the cached copy of the version it became."""
        folder = os.path.join(self.owner.cache(), shard_name(self.shard))
        target = os.path.join(folder, f"v{version:012d}")
        os.makedirs(folder, exist_ok=True)
        lock = os.path.join(self.work, "LOCK")
        if os.path.exists(lock):
            os.unlink(lock)
        write_json(target + ".json", doc)
        try:
            os.rename(self.work, target)
        except OSError:
            pass  # already built by a reader
        evict(folder)

    def _upload(self, used: Mapping[str, int]) -> dict[str, Any]:
        """Each file's pieces at the new version, uploading only what is new."""
        old_files: dict[str, Any] = self.previous["files"]
        out: dict[str, Any] = {}
        rebased: set[str] = set()
        names = sorted(
            n for n in os.listdir(self.work) if n not in _SKIP and not n.endswith(".tmp")
        )
        for name in names:
            local = os.path.join(self.work, name)
            if not name.endswith(SUFFIX):
                continue
            size = used.get(name, os.path.getsize(local))
            old = old_files.get(name)
            same = self._inodes.get(name) == os.stat(local).st_ino
            if old is not None and same and size >= int(old["size"]):
                pieces = [list(p) for p in old["pieces"]]
                if size > int(old["size"]):
                    pieces.append(self._put(name, local, int(old["size"]), size - int(old["size"])))
            else:
                pieces = [self._put(name, local, 0, size)]
                rebased.add(name)
            out[name] = {"size": size, "pieces": pieces}
        for name in names:
            if name.endswith(SUFFIX):
                continue
            local = os.path.join(self.work, name)
            size = os.path.getsize(local)
            old = old_files.get(name)
            log = name.removesuffix(".ckpt")
            grown = out.get(log, {}).get("size", 0) - int((old or {}).get("covers", 0))
            if old is not None and log not in rebased and log in out and grown < size:
                out[name] = old  # the older checkpoint is still valid; the tail replays
                continue
            entry = {"size": size, "pieces": [self._put(name, local, 0, size)]}
            if log in out:
                entry["covers"] = out[log]["size"]
            out[name] = entry
        return out

    def _put(self, name: str, local: str, start: int, size: int) -> list[Any]:
        relative = self.owner.piece_path(self.shard, name)
        upload_range(self.owner.fs, join(self.owner.base, relative), local, start, size)
        return [relative, size]
