"""Smoke test of the concurrent-readers benchmark (``readers_report.py``) at a tiny size.

Checks that reader pools, writers and every configuration run and give rows; it asserts
nothing about speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from readers_report import measure


@pytest.mark.slow
def test_every_configuration_gives_a_row(tmp_path: Path) -> None:
    rows = measure(str(tmp_path), 2_000, [1, 2], 0.2)
    assert len(rows) == 4
    assert [r.status for r in rows[:2]] == ["info", "info"]
    assert all(r.status in ("PASS", "MISS") for r in rows[2:])
    assert all(r.ratio is not None and r.ratio > 0 for r in rows)
    assert "writer" in rows[3].peer_measured
