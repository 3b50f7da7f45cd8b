"""``paused_gc()``: the cyclic garbage collector off for a bulk load, restored after;
``release_free_memory()``: hand the allocator's free pages back to the OS after one.

Opening a log and rebuilding a topic's key map allocate one or more objects per
record, and compiling a filter about a thousand tokens, nodes and closures; none of
them is garbage yet, and with the collector on each collection would rescan them.
A leaf module (imports only the standard library), so every layer may use it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["paused_gc", "release_free_memory"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic GC inside the block; re-enable it after if it was on (nests)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_free_memory() -> None:
    """Return the C allocator's free memory to the OS (glibc's ``malloc_trim``; a no-op
    elsewhere). A bulk load frees its large temporaries; glibc otherwise keeps them."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
