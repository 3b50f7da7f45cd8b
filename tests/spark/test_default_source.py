"""``format("sow")`` in a fresh SparkSession with default settings and no sowlib call (issue 17).

The job runs in its own process (a new JVM): pyspark finds the ``pyspark_sowlib``
module on the workers' path and registers it at the first data source call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sowlib.store import SowStore

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("default_source_job.py")
ORDERS = [
    {"orderId": 1, "price": 120.5, "region": "EU"},
    {"orderId": 2, "price": 80, "region": "APAC"},
    {"orderId": 3, "price": 300, "region": "US"},
    {"orderId": 4, "price": 150, "region": "APAC"},
    {"orderId": 5, "price": 101, "region": "EU"},
]


def _skip_reason() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install sowlib[spark])"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime on PATH and JAVA_HOME is unset"
    return None


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reason = _skip_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Spark tests cannot run in CI: {reason}")
        pytest.skip(reason)
    path = tmp_path_factory.mktemp("default-source") / "sow"
    with SowStore(path) as store:
        store.create_topic("orders", keys=["/orderId"]).publish_many(ORDERS)
    env = dict(os.environ)
    # Spark's Python workers run this interpreter. The checkout goes on their path the
    # way an installed wheel puts the module in site-packages: an editable install's
    # import hook is invisible to the pkgutil scan pyspark does.
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(JOB), str(path)],
        env=env,
        cwd=str(path.parent),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_default_settings_have_pushdown_off(job: dict[str, Any]) -> None:
    assert job["pushdown_default"] == "false"
    assert job["sowlib_in_driver"] is False


def test_where_without_pushdown_runs_in_spark(job: dict[str, Any]) -> None:
    assert job["off_where"] == [1, 5]
    assert "Filter (" in job["off_where_plan"]


def test_filter_option_without_pushdown(job: dict[str, Any]) -> None:
    assert job["off_filter"] == [1, 3, 4, 5]
    assert job["off_both"] == [4]


def test_write_without_register(job: dict[str, Any]) -> None:
    assert job["after_write"] == [1, 2, 3, 4, 5, 9]


def test_where_with_pushdown_is_pushed(job: dict[str, Any]) -> None:
    assert job["on_where"] == [1, 5]
    assert "Filter (" not in job["on_where_plan"]
    assert job["on_filter"] == [4]


def test_register_still_works_after_the_module_was_found(job: dict[str, Any]) -> None:
    assert job["after_register"] == [1, 5]
