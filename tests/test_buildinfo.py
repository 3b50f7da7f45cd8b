"""Issue 27: a user asks which compiled modules this install uses, and is told once
when one is missing."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sowlib
from sowlib.cli import main


def test_build_info_names_the_six_compiled_modules() -> None:
    info = sowlib.build_info()
    assert info["version"] == sowlib.__version__
    compiled = info["compiled"]
    assert isinstance(compiled, dict)
    assert set(compiled) == {
        "sowlib.storage.recordread",
        "sowlib.storage.framepack",
        "sowlib.storage.dirtimes",
        "sowlib.topic.keytable",
        "sowlib.codecs.jsonfields",
        "sowlib.index.movekeys",
    }


def test_cli_version_flag_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert sowlib.__version__ in capsys.readouterr().out


# --- a compiled module missing: a copy of the package without it, in a fresh process


def _copy_without(tmp_path: Path, module_file_prefix: str) -> Path:
    """The package copied to ``tmp_path`` with one compiled module left out."""
    source = Path(sowlib.__file__).resolve().parent
    root = tmp_path / "install"
    shutil.copytree(
        source,
        root / "sowlib",
        ignore=shutil.ignore_patterns(f"{module_file_prefix}.*.so", "__pycache__"),
    )
    return root


_PROBE = """
import warnings
warnings.simplefilter("always")
import sowlib
import importlib
importlib.reload(sowlib)  # a second import in the same process says nothing more
print("FILE", sowlib.__file__)
print("COMPILED", sowlib.build_info()["compiled"])
store = sowlib.SowStore()
orders = store.create_topic("orders", keys=["/id"])
orders.publish({"id": 1})
print("LOOKUP", orders.lookup(1).doc)
"""


def _run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SOWLIB_PURE_PYTHON", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        cwd=root,
        env={**clean, "PYTHONPATH": str(root), **env},
        timeout=120,
        check=True,
    )


def _all_built() -> bool:
    compiled = sowlib.build_info()["compiled"]
    assert isinstance(compiled, dict)
    return all(compiled.values())


@pytest.mark.skipif(not _all_built(), reason="the compiled modules are not built")
def test_a_missing_compiled_module_warns_once_and_names_it(tmp_path: Path) -> None:
    root = _copy_without(tmp_path, "keytable")
    run = _run(root)
    assert f"FILE {root / 'sowlib' / '__init__.py'}" in run.stdout
    assert "'sowlib.topic.keytable': False" in run.stdout
    assert "LOOKUP {'id': 1}" in run.stdout  # the pure-Python path does the work
    warned = [line for line in run.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, run.stderr
    assert "sowlib.topic.keytable" in warned[0]
    assert "sowlib.storage.recordread" not in warned[0]
    assert "SOWLIB_PURE_PYTHON=1" in warned[0]
    assert "pip install -v ." in warned[0]


def test_no_warning_when_pure_python_is_chosen_or_all_is_built(tmp_path: Path) -> None:
    root = _copy_without(tmp_path, "jsonfields")
    chosen = _run(root, SOWLIB_PURE_PYTHON="1")
    assert "RuntimeWarning" not in chosen.stderr
    assert "LOOKUP {'id': 1}" in chosen.stdout
    if _all_built():
        whole = _run(_copy_without(tmp_path / "whole", "no-such-module"))
        assert "RuntimeWarning" not in whole.stderr
        assert "'sowlib.codecs.jsonfields': True" in whole.stdout
