"""Shared fixtures and Hypothesis profiles (dev locally, ci in CI, nightly on demand)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "nightly", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


class FakeClock:
    """A virtual clock for expiration and history tests."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(params=["persistent", "memory"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[object]:
    """A SowStore on disk and one in memory: behaviour must not differ."""
    from sowlib import SowStore

    path = tmp_path / "store" if request.param == "persistent" else None
    store = SowStore(path, clock=clock)
    yield store
    store.close()
