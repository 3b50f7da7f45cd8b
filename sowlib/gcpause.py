"""``paused_gc()``: the cyclic garbage collector off for a bulk load, restored after.

Opening a log and rebuilding a topic's key map allocate one or more objects per
record, and compiling a filter about a thousand tokens, nodes and closures; none of
them is garbage yet, and with the collector on each collection would rescan them.
A leaf module (imports only the standard library), so every layer may use it.
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
