"""Fixtures for the pytest-benchmark files (collected only with ``-o python_files=bench_*.py``).

Sizes are small (20,000 messages) so the whole bench session stays in minutes;
``report.py`` measures the stated targets at full size. A default ``pytest`` run loads
this file too, so it imports no peer (diskcache, lmdb are only in the bench extra).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from workload import json_messages

from sowlib import SowStore

#: Messages per benchmark workload.
BENCH_MESSAGES = 20_000


@pytest.fixture(scope="session")
def messages() -> tuple[bytes, ...]:
    """The first 20,000 messages of the standard workload."""
    return json_messages(BENCH_MESSAGES)


@pytest.fixture
def fresh_dir(tmp_path: Path) -> Callable[[], str]:
    """A function returning a new empty directory under ``tmp_path`` on each call."""
    counter = itertools.count()
    return lambda: os.path.join(tmp_path, f"d{next(counter)}")


@pytest.fixture
def stores() -> Iterator[list[SowStore]]:
    """Stores opened by a benchmark; closed afterwards."""
    opened: list[SowStore] = []
    yield opened
    for store in opened:
        store.close()


@pytest.fixture
def new_topic(fresh_dir: Callable[[], str], stores: list[SowStore]) -> Callable[..., Any]:
    """``new_topic(**options)`` -> a fresh ``orders`` topic in its own store."""

    def make(**options: Any) -> Any:
        store = SowStore(fresh_dir())
        stores.append(store)
        options.setdefault("keys", ["/orderId"])
        return store.create_topic("orders", **options)

    return make
