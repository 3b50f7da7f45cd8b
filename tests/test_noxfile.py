"""The nox sessions run Spark workers with the session's own interpreter (issue 16, item 1).

On a fresh machine the interpreter running nox has none of sowlib's dependencies; a
worker started with it fails to import them. These checks fail on the old noxfile,
which passed ``sys.executable`` to the examples.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

NOXFILE = Path(__file__).resolve().parent.parent / "noxfile.py"


def _load_noxfile() -> ModuleType:
    pytest.importorskip("nox", reason="nox is installed by the dev extra that CI uses")
    spec = importlib.util.spec_from_file_location("sowlib_noxfile", NOXFILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_issue16_spark_workers_use_the_session_interpreter(tmp_path: Path) -> None:
    noxfile = _load_noxfile()
    session = SimpleNamespace(bin=str(tmp_path / "venv" / "bin"))
    env = noxfile.spark_worker_env(session)
    expected = os.path.join(session.bin, "python")
    assert env["PYSPARK_PYTHON"] == expected
    assert env["PYSPARK_DRIVER_PYTHON"] == expected
    assert sys.executable not in env.values()


def test_issue16_noxfile_never_hands_workers_the_nox_interpreter() -> None:
    tree = ast.parse(NOXFILE.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                named = isinstance(key, ast.Constant) and str(key.value).startswith("PYSPARK")
                assert not (named and "sys.executable" in ast.unparse(value)), ast.unparse(node)
