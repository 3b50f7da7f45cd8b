"""The import direction of STYLE.md §1, checked by parsing every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sowlib"

# module prefix -> sowlib modules it must never import
FORBIDDEN = {
    "sowlib.errors": ["sowlib."],
    "sowlib.storage": [
        "sowlib.expr",
        "sowlib.codecs",
        "sowlib.topic",
        "sowlib.store",
        "sowlib.query",
        "sowlib.index",
        "sowlib.keys",
        "sowlib.spark",
    ],
    "sowlib.expr": [
        "sowlib.storage",
        "sowlib.codecs",
        "sowlib.topic",
        "sowlib.store",
        "sowlib.query",
        "sowlib.index",
        "sowlib.spark",
    ],
    "sowlib.codecs": [
        "sowlib.expr",
        "sowlib.storage",
        "sowlib.topic",
        "sowlib.store",
        "sowlib.spark",
    ],
    "sowlib.paths": ["sowlib.expr", "sowlib.storage", "sowlib.codecs", "sowlib.topic"],
    "sowlib.document": ["sowlib."],
    "sowlib.gcpause": ["sowlib."],
    "sowlib.units": ["sowlib.expr", "sowlib.storage", "sowlib.codecs", "sowlib.topic"],
    "sowlib.index": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
    "sowlib.query": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
    "sowlib.topic": ["sowlib.store", "sowlib.spark", "sowlib.cli"],
}
ALLOWED_SELF = {"sowlib.errors": ["sowlib.errors"], "sowlib.document": ["sowlib.document"]}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_module_respects_layering(path: Path) -> None:
    name = _module_name(path)
    for prefix, banned in FORBIDDEN.items():
        if name != prefix and not name.startswith(prefix + "."):
            continue
        for imported in _imports(path):
            if imported.startswith(prefix):
                continue
            for bad in banned:
                assert not (imported + ".").startswith(bad), f"{name} imports {imported}"


def test_package_init_never_imports_spark() -> None:
    imported = _imports(PACKAGE / "__init__.py")
    assert not any(m.startswith("sowlib.spark") for m in imported)


def test_no_module_exceeds_600_lines() -> None:
    long = {
        _module_name(p): n
        for p in MODULES
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
