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
    # The AMPS facade and the transaction log sit on the public topic/store API.
    "sowlib.compat": ["sowlib.storage", "sowlib.spark", "sowlib.cli"],
    "sowlib.journal": [
        "sowlib.storage",
        "sowlib.topic",
        "sowlib.store",
        "sowlib.spark",
        "sowlib.cli",
    ],
    "sowlib.display": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
    "sowlib.frames": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
    "sowlib.progress": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
    "sowlib.projection": ["sowlib.storage", "sowlib.topic", "sowlib.store", "sowlib.spark"],
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


def _runtime_imports(path: Path) -> list[str]:
    """Imports outside ``if TYPE_CHECKING:`` blocks (the edges that can form a circle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(child) for child in ast.walk(node))
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


# The packages this rule covers so far (others still share helpers by private name).
NO_PRIVATE_IMPORTS = ("sowlib.topic", "sowlib.index", "sowlib.query", "sowlib.history")


def test_no_private_name_is_imported_from_another_module() -> None:
    bad = []
    for path in MODULES:
        if not _module_name(path).startswith(NO_PRIVATE_IMPORTS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sowlib"):
                bad += [
                    f"{_module_name(path)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert bad == []


def test_the_topic_parts_never_import_the_facade_and_form_no_circle() -> None:
    names = {_module_name(p): p for p in MODULES if _module_name(p).startswith("sowlib.topic.")}
    graph = {
        name: {m for m in _runtime_imports(path) if m in names and m != name}
        for name, path in names.items()
    }
    for name, deps in graph.items():
        if name not in ("sowlib.topic.facade",):
            assert "sowlib.topic.facade" not in deps, f"{name} imports the facade"
    seen: dict[str, int] = {}

    def visit(node: str, trail: tuple[str, ...]) -> None:
        if seen.get(node) == 2:
            return
        assert seen.get(node) != 1, f"import circle: {' -> '.join((*trail, node))}"
        seen[node] = 1
        for dep in graph[node]:
            visit(dep, (*trail, node))
        seen[node] = 2

    for name in graph:
        visit(name, ())
