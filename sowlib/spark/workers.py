"""Spark's Python workers and sowlib: a check, and errors that say what to do.

Spark runs Python in worker processes started with ``spark.pyspark.python`` or
``PYSPARK_PYTHON`` (the first ``python3`` on PATH when neither is set). A worker
whose Python cannot import sowlib fails with a ``ModuleNotFoundError`` at the end of
a Java stack trace; a session whose workers' scan of installed modules sees no
``pyspark_sowlib`` says ``DATA_SOURCE_NOT_FOUND`` for ``format("sow")``.
:func:`worker_errors` turns both into :class:`~sowlib.errors.SparkSetupError`
around sowlib's own Spark calls, and :func:`check_workers` runs a small job that
reports the Python of every worker. Imports pyspark and ``sowlib.errors`` only.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from sowlib.errors import SowError, SparkSetupError

__all__ = ["WorkerPython", "check_workers", "setup_error", "worker_errors", "workers_python"]

# "No module named 'sowlib'", or a module of it an older sowlib on the workers lacks
_NO_MODULE = re.compile(r"No module named '(?:sowlib|pyspark_sowlib)(?:\.[\w.]+)?'")
_NOT_FOUND = re.compile(r"\[DATA_SOURCE_NOT_FOUND\][^\n]*?data source: sow\.")
_NO_PYTHON = re.compile(r'Cannot run program "([^"]+)"')


def workers_python(spark: Any) -> str:
    """The Python ``spark``'s workers are configured to run: ``spark.pyspark.python``,
    else ``PYSPARK_PYTHON``, else ``python3`` (the first on the workers' PATH)."""
    configured: str | None = None
    with contextlib.suppress(Exception):  # a stopped session: the environment still tells
        configured = spark.conf.get("spark.pyspark.python", None)
    return configured or os.environ.get("PYSPARK_PYTHON") or "python3 (the first on PATH)"


def setup_error(exc: BaseException, python: Callable[[], str]) -> SparkSetupError | None:
    """The :class:`SparkSetupError` that ``exc`` (a Spark error) stands for, or None.

    ``python()`` names the workers' Python for the message (called only on a match).
    """
    if isinstance(exc, SowError):
        return None
    text = str(exc)
    if (found := _NOT_FOUND.search(text)) is not None:
        return SparkSetupError("source_not_found", python(), found.group(0))
    if (found := _NO_MODULE.search(text)) is not None:
        return SparkSetupError("no_module", python(), found.group(0))
    if (found := _NO_PYTHON.search(text)) is not None:
        return SparkSetupError("no_python", found.group(1), found.group(0))
    return None


@contextmanager
def worker_errors(spark: Any) -> Iterator[None]:
    """Re-raise a Spark error caused by sowlib's absence on ``spark``'s workers as a
    :class:`SparkSetupError` (the Spark error its ``__cause__``); others pass as they are."""
    try:
        yield
    except Exception as exc:
        found = setup_error(exc, lambda: workers_python(spark))
        if found is None:
            raise
        raise found from exc


@attrs.frozen
class WorkerPython:
    """What one Spark worker's Python has, as :func:`check_workers` found it.

    Attributes:
        host: the worker's host name.
        executable: the worker's ``sys.executable``.
        python_version: e.g. ``3.11.7``.
        sowlib_version: ``sowlib.__version__`` there, or None when it cannot import sowlib.
        sowlib_path: the directory sowlib was imported from, or None.
        error: why ``import sowlib`` failed, or None.
        data_source_module: pyspark's scan of the installed modules (what makes
            ``format("sow")`` work without ``register``) sees ``pyspark_sowlib``.
    """

    host: str
    executable: str
    python_version: str
    sowlib_version: str | None
    sowlib_path: str | None
    error: str | None
    data_source_module: bool


def _probe(_: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
    """Run on a worker: its Python, and whether it imports sowlib (builtins only, so the
    function reaches a worker without sowlib)."""
    import importlib
    import os as os_
    import pkgutil
    import socket
    import sys

    scan = any(m.name == "pyspark_sowlib" for m in pkgutil.iter_modules())
    head = (socket.gethostname(), sys.executable, sys.version.split()[0])
    try:  # by name: the package itself, as a user's import would find it
        sowlib = importlib.import_module("sowlib")
    except Exception as exc:  # any failure to import is the report, sent to the driver
        yield (*head, None, None, f"{type(exc).__name__}: {exc}", scan)
        return
    yield (*head, sowlib.__version__, os_.path.dirname(sowlib.__file__ or ""), None, scan)


def _by_value(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with builtins only for globals, which pyspark's cloudpickle ships by value
    (a function of ``__main__``) instead of as a reference to a sowlib module."""
    copy = types.FunctionType(func.__code__, {"__builtins__": builtins}, func.__name__)
    copy.__module__ = "__main__"
    return copy


def check_workers(spark: Any, *, without_register: bool = False) -> list[WorkerPython]:
    """Import sowlib in Spark's Python workers; say which Python they run and what it has.

    Runs one task per default parallelism slot of ``spark`` (a classic SparkSession)
    and returns one :class:`WorkerPython` per distinct host and executable.

    Args:
        spark: the session.
        without_register: also require ``format("sow")`` to work without
            :func:`~sowlib.spark.register`: every worker's scan of installed modules
            must see ``pyspark_sowlib`` (a default editable install does not).
    Raises:
        SparkSetupError: a worker cannot import sowlib (``problem="no_module"``, its
            ``python`` the worker's executable), its Python does not start
            (``"no_python"``), or with ``without_register`` a worker's scan misses
            the module (``"source_not_found"``).

    Example:
        >>> [w.executable for w in check_workers(spark)]  # doctest: +SKIP
        ['/home/me/venv/bin/python']
    """
    sc = spark.sparkContext
    slots = max(1, int(sc.defaultParallelism))
    with worker_errors(spark):
        rows = sc.parallelize(range(slots), slots).mapPartitions(_by_value(_probe)).collect()
    found = list({(r[0], r[1]): WorkerPython(*r) for r in rows}.values())
    for worker in found:
        if worker.error is not None:
            raise SparkSetupError("no_module", worker.executable, worker.error)
        if without_register and not worker.data_source_module:
            raise SparkSetupError(
                "source_not_found",
                worker.executable,
                f"sowlib {worker.sowlib_version} from {worker.sowlib_path}, but no"
                " pyspark_sowlib among the modules that Python lists",
            )
    return found
