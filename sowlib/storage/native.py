"""Which form reads records by offset: the C extension, or none.

``sowlib.storage.recordread`` is a C extension built at install time where a compiler
is found (``setup.py`` marks it optional). It reads one PUT record with a u64 key and
nothing optional, checks its checksum and gives the same fields as
:func:`sowlib.storage.walk.read_put`, the reference, or None for anything else, which
the caller then reads through the reference (which raises for a damaged record).
``tests/storage/test_recordread.py`` checks that the two agree. Its ``put_payloads``
is the C form of :func:`sowlib.storage.walk.put_payloads` (payloads of records a walk
has verified), and its ``common_run`` the C form of
:func:`sowlib.storage.entries.common_run` (the recovery walk over common records), each
held to its reference by the same tests; its ``kept_chunks`` is the C form of
:func:`sowlib.storage.compaction.kept_chunks` (a compaction's check of the records it
keeps, and their bytes gathered), held to it by ``tests/storage/test_kept_runs.py``.
Imports only ``storage.format``.

Setting the environment variable ``SOWLIB_PURE_PYTHON`` to a non-empty value before
sowlib is imported turns the C forms off.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import cast

from sowlib.storage.format import Buf

__all__ = [
    "NATIVE_COMMON_RUN",
    "NATIVE_KEPT_CHUNKS",
    "NATIVE_PUT_PAYLOADS",
    "NATIVE_READ_PUT",
    "PURE_PYTHON_ENV",
    "NativeCommonRun",
    "NativeKeptChunks",
    "NativePutPayloads",
    "NativeReadPut",
    "load_native_common_run",
    "load_native_kept_chunks",
    "load_native_put_payloads",
    "load_native_read_put",
    "optional_module",
]

NativeReadPut = Callable[[Buf, int, int], tuple[int, float, float, bytes, int, bytes] | None]
"""``read_put(buf, off, limit)``: the fields of the common PUT record at ``off``, or None."""

NativePutPayloads = Callable[[Buf, list[int], int], list[bytes] | None]
"""``put_payloads(buf, offsets, limit)``: the payloads of PUT records at ``offsets``, or None."""

NativeCommonRun = Callable[[Buf, int, int], tuple[int, bytes, list[int]]]
"""``common_run(buf, off, limit)``: where the run stops, the offsets (int64 bytes), the keys."""

NativeKeptChunks = Callable[[Buf, list[int], int, int, int], tuple[list[int], list[bytes], int]]
"""``kept_chunks(buf, offsets, first, limit, chunk)``: new offsets, the kept bytes in chunks,
first damaged or -1."""

PURE_PYTHON_ENV = "SOWLIB_PURE_PYTHON"
"""The environment variable that, when set and not empty, turns the C form off."""


def optional_module(name: str) -> ModuleType | None:
    """The optional C extension ``name`` (a dotted module name), or None: not built
    (no C compiler at install) or turned off by :data:`PURE_PYTHON_ENV`."""
    if os.environ.get(PURE_PYTHON_ENV):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # built without a C compiler: the references do the work
        return None


def _module() -> ModuleType | None:
    """The C module, or None (not built, or turned off)."""
    return optional_module("sowlib.storage.recordread")


def load_native_read_put() -> NativeReadPut | None:
    """The C form of :func:`~sowlib.storage.walk.read_put`, or None."""
    module = _module()
    return None if module is None else cast("NativeReadPut", module.read_put)


def load_native_put_payloads() -> NativePutPayloads | None:
    """The C form of :func:`~sowlib.storage.walk.put_payloads`, or None."""
    module = _module()
    return None if module is None else cast("NativePutPayloads", module.put_payloads)


def load_native_common_run() -> NativeCommonRun | None:
    """The C form of :func:`~sowlib.storage.entries.common_run`, or None."""
    module = _module()
    return None if module is None else cast("NativeCommonRun", module.common_run)


def load_native_kept_chunks() -> NativeKeptChunks | None:
    """The C form of :func:`~sowlib.storage.compaction.kept_chunks`, or None."""
    module = _module()
    return None if module is None else cast("NativeKeptChunks", module.kept_chunks)


NATIVE_READ_PUT: NativeReadPut | None = load_native_read_put()
"""What :func:`load_native_read_put` gave when sowlib was imported."""

NATIVE_PUT_PAYLOADS: NativePutPayloads | None = load_native_put_payloads()
"""What :func:`load_native_put_payloads` gave when sowlib was imported."""

NATIVE_COMMON_RUN: NativeCommonRun | None = load_native_common_run()
"""What :func:`load_native_common_run` gave when sowlib was imported."""

NATIVE_KEPT_CHUNKS: NativeKeptChunks | None = load_native_kept_chunks()
"""What :func:`load_native_kept_chunks` gave when sowlib was imported."""
