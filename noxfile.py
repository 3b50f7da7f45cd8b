"""The single entry point for checks: `nox` locally, `nox -s ci` in CI (STYLE.md §11)."""

from __future__ import annotations

import glob
import os
import sys
import tomllib

import nox

nox.options.sessions = ["lint", "typecheck", "tests", "docs", "examples", "spark"]
nox.options.error_on_missing_interpreters = True

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _lint(session: nox.Session) -> None:
    session.run("ruff", "check", "sowlib", "tests", "examples", "noxfile.py")
    session.run("ruff", "format", "--check", "sowlib", "tests", "examples", "noxfile.py")
    session.run("ruff", "check", "pyspark_sowlib.py")
    session.run("ruff", "format", "--check", "pyspark_sowlib.py")


def _typecheck(session: nox.Session) -> None:
    session.run("mypy", "--strict", "sowlib")
    session.run("mypy", "--strict", "pyspark_sowlib.py")
    # Benchmarks import their helpers as top-level modules (they run as scripts too).
    session.run("mypy", "--exclude", "tests/bench", "tests")


def _tests(session: nox.Session) -> None:
    session.run(
        "pytest",
        "-m",
        "not spark",
        "--cov=sowlib",
        "--cov-report=term:skip-covered",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={
            "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
            # the official AMPS client samples, downloaded once (tests/compat/samples)
            "SOWLIB_AMPS_SAMPLES_CACHE": os.path.join(".nox", "amps-samples"),
        },
    )


# The suites whose code has an optional C form, run again with the C forms turned off:
# the Python paths are what a machine without a compiler runs.
PURE_PYTHON_SUITES = (
    "tests/storage",
    "tests/codecs/test_json_fields.py",
    "tests/test_bulk_rebuild.py",
    "tests/test_topic_memory.py",
    "tests/test_read_paths.py",
    "tests/test_crash_topic.py",
    "tests/test_topic.py",
    "tests/compliance",
    "tests/columns",
)


def _tests_pure_python(session: nox.Session) -> None:
    session.run(
        "pytest",
        "-m",
        "not spark",
        "-p",
        "no:cacheprovider",
        "-q",
        *PURE_PYTHON_SUITES,
        env={
            "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
            "SOWLIB_PURE_PYTHON": "1",
        },
    )


def _docs(session: nox.Session) -> None:
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", "build/site", env={"NO_MKDOCS_2_WARNING": "1"}
    )


def spark_worker_env(session: nox.Session) -> dict[str, str]:
    """Spark's Python workers run the session's own interpreter.

    Not ``sys.executable``: that is the interpreter running nox, which on a fresh
    machine has none of sowlib's dependencies (the workers would fail to import them).
    """
    python = os.path.join(session.bin, "python")
    return {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}


def _examples(session: nox.Session) -> None:
    env = spark_worker_env(session)
    # Fail early, with a clear message, if the worker interpreter lacks the package.
    session.run(env["PYSPARK_PYTHON"], "-c", "import msgpack, sowlib, sowlib.spark", external=True)
    for path in sorted(glob.glob("examples/*.py")):
        session.log(f"example: {path}")
        session.run("python", path, env=env)


def _spark(session: nox.Session) -> None:
    # SOWLIB_SPARK_FULL: the differential test runs every compliance case, not a sample.
    session.run(
        "pytest",
        "-m",
        "spark",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={
            "SOWLIB_SPARK_FULL": os.environ.get("SOWLIB_SPARK_FULL", "1"),
            **spark_worker_env(session),
        },
    )


def _notebook(session: nox.Session) -> None:
    # PYTHONPATH: the checkout's top-level pyspark_sowlib module must be visible to the
    # pkgutil scan of Spark's workers, which an editable install's import hook is not.
    root = os.path.dirname(os.path.abspath(__file__))
    env = {**spark_worker_env(session), "PYTHONPATH": root}
    session.run("python", "tests/run_notebook.py", "examples/notebook.ipynb", env=env)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("-e", ".[lint]")
    _lint(session)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the package, plain mypy on the tests."""
    session.install("-e", ".[lint,test]")
    _typecheck(session)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """pytest without the Spark tests, with coverage."""
    session.install("-e", ".[test]")
    _tests(session)
    _tests_pure_python(session)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """mkdocs build --strict."""
    session.install("-e", ".[docs]")
    _docs(session)


@nox.session(python=PYTHON)
def examples(session: nox.Session) -> None:
    """Run every examples/*.py."""
    session.install("-e", ".[spark]")
    _examples(session)


@nox.session(python=PYTHON)
def spark(session: nox.Session) -> None:
    """pytest -m spark against a local SparkSession (needs Java 17)."""
    session.install("-e", ".[test,spark]")
    _spark(session)


@nox.session(python=PYTHON)
def notebook(session: nox.Session) -> None:
    """Execute examples/notebook.ipynb headless (nbclient); every cell must run."""
    session.install("-e", ".[notebook,spark]")
    _notebook(session)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks against the peers (sqlite3, diskcache, lmdb, dict); not run by default."""
    session.install("-e", ".[test,bench,spark]")
    session.run(
        "pytest",
        "tests/bench",
        "-o",
        "python_files=bench_*.py",
        "-p",
        "no:cacheprovider",
        "--benchmark-only",
        "--benchmark-columns=min,median,mean,max,rounds",
        *session.posargs,
    )


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Every target against the peers in one run (rewrites docs/performance.md); not run by
    default. ``nox -s report -- --size 1m`` for the 1,000,000-record sizes."""
    session.install("-e", ".[bench]")
    session.run("python", "tests/bench/report.py", *session.posargs)


@nox.session(python=PYTHON)
def readers(session: nox.Session) -> None:
    """P read-only processes doing lookups beside a writer, sowlib vs sqlite3 (default
    1,000,000 records, P = 1 2 4 8); not run by default."""
    session.install("-e", ".[bench]")
    session.run("python", "tests/bench/readers_report.py", *session.posargs)


@nox.session(python=PYTHON)
def scale(session: nox.Session) -> None:
    """The scale benchmark against sqlite3 (default 1,000,000 records); not run by default."""
    session.install("-e", ".")
    session.run(
        "python", "tests/bench/scale_report.py", *(session.posargs or ["--records", "1000000"])
    )


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build the sdist and wheel and check their metadata."""
    session.install("build", "twine")
    session.run("python", "-m", "build", "--outdir", "build/dist")
    session.run("twine", "check", *glob.glob("build/dist/*"))


def readme_setup_commands(readme: str = "README.md") -> list[str]:
    """The commands of the README's "Set-up" section, as written there (its bash blocks,
    without the one that runs nox itself)."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```bash\n")[1:]]
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and "nox" not in line]


@nox.session(python=PYTHON)
def readme(session: nox.Session) -> None:
    """The README's set-up commands verbatim in this fresh virtualenv, then, on that
    install, ``format("sow")`` in a plain SparkSession and the notebook."""
    env = spark_worker_env(session)
    for command in readme_setup_commands():
        session.log(f"README: {command}")
        session.run("bash", "-c", command, env=env, external=True)
    session.run("python", "tests/readme_spark_read.py", env=env)
    with open("pyproject.toml", "rb") as f:  # the notebook runner's packages, not sowlib again
        extras = tomllib.load(f)["project"]["optional-dependencies"]["notebook"]
    session.install(*extras)
    session.run("python", "tests/run_notebook.py", "examples/notebook.ipynb", env=env)


@nox.session(python=PYTHON)
def ci(session: nox.Session) -> None:
    """Everything marked default, in one environment (one install of pyspark); then the
    README's own set-up in a fresh one (``readme``)."""
    session.notify("readme")
    session.install("-e", ".[dev]")
    _lint(session)
    _typecheck(session)
    _tests(session)
    _tests_pure_python(session)
    _docs(session)
    _examples(session)
    _spark(session)
    _notebook(session)
