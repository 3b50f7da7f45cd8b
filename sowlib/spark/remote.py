"""The filesystem layer of sharded stores on object storage: fsspec, used as it is.

A store root is any URL fsspec understands (``s3://``, ``gs://``, ``abfs://``,
``hdfs://``, ``file://``) with the filesystem configured the standard way (for S3:
``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``... or ``storage_options``). Everything
written is immutable except what :func:`put_if_absent` creates, which is created
at most once. Imports fsspec and ``sowlib.errors``; nothing else of sowlib.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from collections.abc import Mapping
from typing import Any

import attrs
import fsspec
from fsspec.implementations.local import LocalFileSystem

from sowlib.errors import ConfigError, StorageError

__all__ = [
    "ShardConflictError",
    "download",
    "filesystem",
    "is_url",
    "join",
    "listing",
    "put_if_absent",
    "read_json",
    "upload_range",
]

_COPY = 8 << 20


@attrs.define(auto_exc=True, eq=False)
class ShardConflictError(StorageError):
    """Another writer already committed ``what`` (a shard or store version).

    Nothing of the losing writer is visible: its pieces are unreferenced (``vacuum``
    removes them) and the store holds the winner's version. Check out the new
    version and apply the change again.
    """

    root: str
    what: str
    holder: str | None = None

    def message(self) -> str:
        by = f" (by {self.holder})" if self.holder else ""
        return f"{self.root}: {self.what} was committed by another writer{by}; retry on it"


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a plain local path."""
    return "://" in os.fspath(path)


def filesystem(
    url: str, storage_options: Mapping[str, Any] | None = None
) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem of ``url`` and the path inside it (no trailing slash).

    Raises:
        ConfigError: fsspec has no filesystem for the URL's scheme (its package,
            such as s3fs for ``s3://``, is not installed).
    """
    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except (ImportError, ValueError) as exc:
        raise ConfigError(url, f"no filesystem for this URL: {exc}") from None
    return fs, str(path).rstrip("/")


def join(*parts: str) -> str:
    """Object paths joined with ``/`` (fsspec paths are always ``/``-separated)."""
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts))


def read_json(fs: fsspec.AbstractFileSystem, path: str) -> Any:
    """The JSON document stored at ``path``."""
    return json.loads(fs.cat_file(path))


def put_if_absent(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists; True when this call created it.

    The guard is the filesystem's own: a local disk links a complete temporary file
    to the name (``link`` fails when the name exists); S3 (s3fs) sends
    ``If-None-Match: *``, which the store refuses when the key exists; any other
    filesystem uses fsspec's ``pipe_file(mode="create")`` (gcsfs and adlfs make it
    a conditional write; a filesystem without one checks existence first, which two
    writers can both pass: see the cluster page of the docs).
    """
    if isinstance(fs, LocalFileSystem):
        return _link_if_absent(path, data)
    try:
        fs.pipe_file(path, data, mode="create")
    except FileExistsError:
        return False
    except OSError as exc:
        # s3fs maps S3's 412 Precondition Failed to FileExistsError, or to EINVAL
        # when the response names no condition
        if exc.errno == errno.EINVAL and "precondition" in str(exc).lower():
            return False
        raise
    finally:
        fs.invalidate_cache(path.rpartition("/")[0])
    return True


def _link_if_absent(path: str, data: bytes) -> bool:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


def download(fs: fsspec.AbstractFileSystem, path: str, out: Any) -> None:
    """Copy the object at ``path`` to the open binary file ``out``."""
    with fs.open(path, "rb") as src:
        shutil.copyfileobj(src, out, _COPY)


def upload_range(
    fs: fsspec.AbstractFileSystem, path: str, local: str, start: int, size: int
) -> None:
    """Write bytes ``[start, start + size)`` of the local file ``local`` as a new object."""
    try:
        target = fs.open(path, "wb")
    except FileNotFoundError:  # a filesystem with folders (local, HDFS)
        fs.makedirs(path.rpartition("/")[0], exist_ok=True)
        target = fs.open(path, "wb")
    with open(local, "rb") as src, target as out:
        src.seek(start)
        left = size
        while left:
            chunk = src.read(min(left, _COPY))
            if not chunk:
                raise OSError(errno.EIO, f"shorter than {start + size} bytes", local)
            out.write(chunk)
            left -= len(chunk)


def listing(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    """The base names in ``folder`` (empty when it does not exist), read afresh."""
    fs.invalidate_cache(folder)
    try:
        entries = fs.ls(folder, detail=False)
    except FileNotFoundError:
        return []
    return sorted(str(e).rstrip("/").rpartition("/")[2] for e in entries)
