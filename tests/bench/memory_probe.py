"""Anonymous memory of a read-only opener, measured in a fresh process.

Usage: ``python tests/bench/memory_probe.py STORE_DIR`` prints the growth of
``RssAnon`` (bytes) from before ``SowStore(STORE_DIR, readonly=True)`` to after one
``lookup`` and one indexed query on its ``orders`` topic. ``report.py``'s reopen
scenario runs it so its own memory (the generated messages) does not count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
for _p in (str(_HERE), str(_ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from scale_data import rss_anon  # noqa: E402  (the path setup above)

__all__ = ["main", "opener_memory"]


def opener_memory(directory: str) -> int:
    """Run this script on ``directory`` in a fresh interpreter; the bytes it reports."""
    done = subprocess.run(
        [sys.executable, __file__, directory], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1])


def main(argv: list[str]) -> int:
    """Open read-only, read, print the memory grown."""
    from sowlib import SowStore

    base = rss_anon()
    store = SowStore(argv[0], readonly=True)
    topic = store.topic("orders")
    assert topic.lookup(0) is not None
    _ = [r.data for r in topic.sow("/symbol = 'SYM001'")]
    print(rss_anon() - base)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
