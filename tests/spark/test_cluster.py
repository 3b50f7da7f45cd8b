"""The sharded sink, reads and lookups on ``local-cluster[2,1,1024]`` over S3 (moto).

One test, in its own process (a new JVM with two executor processes whose working
and local directories differ): the rest of the sharded tests run in the shared
``local[2]`` session, which is lighter on a small machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("cluster_job.py")


def test_sharded_sink_on_two_executors_sharing_no_path(
    bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark")
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("SOWLIB_CACHE_DIR", None)  # each executor caches under its own local dir
    done = subprocess.run(
        [sys.executable, str(JOB), f"{bucket}/cluster", s3_endpoint, str(tmp_path / "killed")],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is None
    assert (tmp_path / "killed").read_text().count("killed") >= 1  # a task did fail once
    assert result["last_batch"] >= 9
    assert result["state_ok"]
    assert result["filtered_ok"]
    assert result["lookup_ok"]
    assert len(result["local_dirs"]) == 2
    assert len(result["work_dirs"]) == 2
