"""Issue 27: the README's set-up is what CI runs, word for word, and it installs sowlib
so that pyspark's data-source lookup finds it (``format("sow")`` in a plain session)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _readme_setup_commands() -> Any:
    """The noxfile's ``readme_setup_commands``, compiled alone (loading the noxfile
    would register its sessions a second time in this process)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    (func,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "readme_setup_commands"
    ]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([func], []), "noxfile.py", "exec"), namespace)
    return namespace["readme_setup_commands"]


def _setup_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def test_ci_runs_the_readme_setup_verbatim() -> None:
    commands = _readme_setup_commands()(str(ROOT / "README.md"))
    main_job = _setup_blocks()[0].strip()
    assert commands == [main_job]  # the very text of the README, not a paraphrase
    assert "examples/spark_pipeline.py" in main_job


def test_the_readme_install_is_one_pyspark_sees() -> None:
    """A default editable install maps packages through an import hook that pyspark's
    ``pkgutil`` scan for ``pyspark_*`` modules does not see (DATA_SOURCE_NOT_FOUND)."""
    main_job = _setup_blocks()[0]
    install = main_job.split("&&")[0]
    assert "pip install" in install
    assert "[spark]" in install
    editable = re.search(r"(^|\s)(-e|--editable)(\s|$)", install) is not None
    assert not editable or "editable_mode=compat" in install


def test_ci_session_queues_the_readme_session_in_a_fresh_virtualenv() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    ci = ast.unparse(functions["ci"])
    assert "session.notify('readme')" in ci
    readme = ast.unparse(functions["readme"])
    assert "readme_setup_commands()" in readme
    assert "tests/readme_spark_read.py" in readme
    assert "examples/notebook.ipynb" in readme
    assert "PYTHONPATH" not in readme  # the install itself must make sowlib importable
    assert "session.install('-e'" not in readme
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "nox -s ci" in ci_script
