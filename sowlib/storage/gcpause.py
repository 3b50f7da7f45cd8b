"""``paused_gc()``: the cyclic garbage collector off for a bulk load, restored after.

Opening a log and rebuilding a topic's key map allocate one or more objects per
record, none of which can form a reference cycle; with the collector on, each
collection would rescan the growing heap. Imports only the standard library.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


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
