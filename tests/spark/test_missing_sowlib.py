"""Spark's Python workers without sowlib: sowlib's Spark calls say what to do (issue 27).

The job runs in its own process (a new JVM) whose workers run a fresh virtualenv's
Python that sees every package of this one but sowlib: no ``sowlib`` package, no
``pyspark_sowlib`` module, no editable-install hook. That is the Python of a user who
installed sowlib in one environment and let Spark start another.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from sowlib.errors import SowError, SparkSetupError
from sowlib.store import SowStore

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("missing_sowlib_job.py")
_HIDDEN = ("sowlib", "pyspark_sowlib", "__editable__")


def _skip_reason() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install sowlib[spark])"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime on PATH and JAVA_HOME is unset"
    return None


def _python_without_sowlib(dest: Path) -> Path:
    """A virtualenv whose site-packages lists this environment's packages but sowlib's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    mirror = dest / "mirror"
    mirror.mkdir()
    paths = sysconfig.get_paths()
    for folder in dict.fromkeys((paths["purelib"], paths["platlib"])):
        for name in os.listdir(folder):
            low = name.lower()
            if low.startswith(_HIDDEN) or low.endswith(".pth") or (mirror / name).exists():
                continue
            (mirror / name).symlink_to(Path(folder) / name)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "mirror.pth").write_text(f"{mirror}\n", encoding="utf-8")
    return python


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _skip_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Spark tests cannot run in CI: {reason}")
        pytest.skip(reason)
    where = tmp_path_factory.mktemp("bare")
    python = _python_without_sowlib(where / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = (
        "import pyspark, pyarrow, pandas\ntry:\n import sowlib\nexcept ImportError as e: print(e)"
    )
    said = subprocess.run(  # not from the checkout: "-c" and "-m" put the cwd on the path
        [str(python), "-c", probe], env=env, cwd=where, capture_output=True, text=True, check=True
    )
    assert said.stdout.strip() == "No module named 'sowlib'"
    return python


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, bare_python: Path) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("missing")
    store = work / "sow"
    with SowStore(store) as opened:
        opened.create_topic("orders", keys=["/id"]).publish_many([{"id": 1, "price": 2.5}])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = str(bare_python)
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    done = subprocess.run(
        [sys.executable, str(JOB), str(ROOT), str(store), str(work)],
        env=env,
        cwd=str(work),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["bare"] = str(bare_python)
    return result


def _setup_error(found: dict[str, Any], problem: str, *, spark_failed: bool = True) -> str:
    assert found["setup_error"], found
    assert found["problem"] == problem, found
    # a failed Spark job is kept as the cause
    assert (found["cause"] is not None) is spark_failed, found
    message: str = found["message"]
    assert "PYSPARK_PYTHON" in message
    assert "spark.pyspark.python" in message
    assert "--py-files" in message
    assert "addPyFile" in message
    return message


def test_spark_alone_says_only_data_source_not_found(job: dict[str, Any]) -> None:
    # what a user of plain format("sow") gets from Spark: the reason read() exists
    assert "DATA_SOURCE_NOT_FOUND" in job["raw_read"]["message"]
    assert not job["raw_read"]["setup_error"]


def test_read_of_an_unfound_source_names_the_install_and_register(job: dict[str, Any]) -> None:
    found = job["read"]
    message = _setup_error(found, "source_not_found")
    assert "DATA_SOURCE_NOT_FOUND" in found["cause_text"]
    assert "data source named 'sow'" in message
    assert "editable_mode=compat" in message
    assert "sowlib.spark.register(spark)" in message
    assert job["bare"] in message  # the workers' Python, as configured


def test_check_workers_names_the_workers_python(job: dict[str, Any]) -> None:
    found = job["check_workers"]
    message = _setup_error(found, "no_module", spark_failed=False)  # the probe itself ran
    # the worker reported its own interpreter and its own words
    assert found["python"] == job["bare"]
    assert found["detail"] == "ModuleNotFoundError: No module named 'sowlib'"
    assert f"they run {job['bare']}" in message


def test_write_sharded_says_the_workers_cannot_import_sowlib(job: dict[str, Any]) -> None:
    found = job["write_sharded"]
    message = _setup_error(found, "no_module")
    assert "No module named 'sowlib'" in found["detail"]
    assert "No module named 'sowlib'" in found["cause_text"]
    assert job["bare"] in message


def test_a_sink_whose_batch_runs_sowlib_on_the_workers_says_so(job: dict[str, Any]) -> None:
    # the batch holds a lookup UDF: the workers unpickle sowlib's code to run it
    _setup_error(job["sink"], "no_module")
    assert job["sink_last_batch"] is None  # the batch stays unrecorded, for Spark's retry


def test_a_registered_source_fails_on_the_workers_and_says_so(job: dict[str, Any]) -> None:
    for name in ("registered_read", "write"):
        found = job[name]
        _setup_error(found, "no_module")
        assert found["cause"] == "AnalysisException", found


def test_check_workers_reports_a_python_with_sowlib(spark: Any) -> None:
    import sowlib
    from sowlib.spark import WorkerPython, check_workers

    found = check_workers(spark)
    assert found
    assert all(isinstance(w, WorkerPython) for w in found)
    assert {w.executable for w in found} == {sys.executable}
    assert {w.sowlib_version for w in found} == {sowlib.__version__}
    assert all(w.error is None and w.sowlib_path for w in found)


def test_setup_error_is_a_sow_error_and_leaves_other_errors_alone() -> None:
    from sowlib.spark.workers import setup_error

    assert issubclass(SparkSetupError, SowError)
    other = RuntimeError("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: parquet2.")
    assert setup_error(other, lambda: "python3") is None
    assert setup_error(RuntimeError("No module named 'numpy'"), lambda: "python3") is None
    ours = SparkSetupError("no_module", "python3", "No module named 'sowlib'")
    assert setup_error(ours, lambda: "python3") is None  # never wrapped twice
    missing = RuntimeError('java.io.IOException: Cannot run program "/nope/python": error=2')
    found = setup_error(missing, lambda: "python3")
    assert found is not None
    assert (found.problem, found.python) == ("no_python", "/nope/python")
    assert "PYSPARK_PYTHON" in str(found)
