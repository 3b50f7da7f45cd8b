"""The import rules of STYLE.md §1 and DESIGN.md §1, checked by parsing every module.

How the graph is read: every ``import`` and ``from ... import`` anywhere in a module
counts (at the top, under ``if TYPE_CHECKING:``, inside a function), relative imports
are resolved, and ``from sowlib.pkg import name`` is an edge to ``sowlib.pkg.name``
when that is a module, else to the package itself (its ``__init__``).

The rules:

1. **Layers.** Every module belongs to a unit (a top-level module, or a package of
   ``sowlib/``) and every unit has a layer in :data:`LAYERS`; a module outside the
   table fails, so a new module must be placed. A module may import its own unit and
   units of a *lower* layer only.
2. **No circle**, among modules, by any reading (the strongly connected components of
   the graph above have one module each). A package ``__init__`` that re-exports its
   submodules is part of the graph like any module: a submodule that imported its
   own package's ``__init__`` back would be a circle.
3. **Forbidden edges** of DESIGN.md, kept explicitly (:data:`FORBIDDEN`).
4. **No private name across modules.** No ``from module import _name`` of a sowlib
   module; no ``x._name`` attribute (dunders aside) unless ``x`` is ``self`` or
   ``cls``, or ``_name`` is a private member defined in the same module (a class
   reading another instance of itself, or a friend class beside it). Named-tuple
   methods (``_replace``, ``_asdict``...) are public API despite the underscore;
   the few private members of third-party libraries sowlib relies on are listed in
   :data:`THIRD_PARTY_PRIVATE` with the reason.
5. No module over 600 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sowlib"

#: unit -> layer. A unit imports only itself and lower layers.
LAYERS = {
    # the foundation: no sowlib imports but each other, downward
    "sowlib.errors": 0,
    "sowlib.document": 0,
    "sowlib.gcpause": 0,
    "sowlib.buildinfo": 0,
    "sowlib.units": 1,
    "sowlib.paths": 1,
    "sowlib.projection": 1,
    "sowlib.progress": 1,
    "sowlib.timer": 1,
    "sowlib.cli_input": 1,
    # the filter language, codecs, the log, keys, results' record type
    "sowlib.expr": 2,
    "sowlib.codecs": 2,
    "sowlib.storage": 2,
    "sowlib.keys": 2,
    "sowlib.record": 2,
    # indexes and what reads records and configuration
    "sowlib.index": 3,
    "sowlib.columns": 3,
    "sowlib.frames": 3,
    "sowlib.subscriptions": 3,
    "sowlib.state": 3,
    "sowlib.config": 3,
    "sowlib.display": 4,
    "sowlib.history": 4,
    "sowlib.store_files": 4,
    "sowlib.journal": 4,
    "sowlib.verifying": 4,
    # the query engine and the topic
    "sowlib.query": 5,
    "sowlib.queues": 5,
    "sowlib.results": 6,
    "sowlib.topic": 7,
    "sowlib.reconfigure": 7,
    "sowlib.views": 7,  # derived topics: below the store, beside (never importing) topic
    "sowlib.store": 8,
    # what sits on the store
    "sowlib.cli_data": 9,
    "sowlib.compat": 9,
    "sowlib.spark": 9,
    "sowlib.cli": 10,
    "sowlib": 10,  # the package's public names
    "sowlib.__main__": 11,
}

#: DESIGN.md §1 and STYLE.md §1, stated as they are written there.
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
    "sowlib.expr": ["sowlib.storage", "sowlib.codecs", "sowlib.topic", "sowlib.index"],
    "sowlib.codecs": ["sowlib.expr", "sowlib.storage", "sowlib.topic", "sowlib.store"],
    "sowlib": ["sowlib.spark", "sowlib.cli"],
}
#: What the storage and expr packages may import at all (STYLE.md §1).
ONLY = {
    "sowlib.storage": {"sowlib.storage", "sowlib.errors", "sowlib.units", "sowlib.gcpause"},
    "sowlib.expr": {
        "sowlib.expr",
        "sowlib.errors",
        "sowlib.paths",
        "sowlib.document",
        "sowlib.gcpause",
    },
}

#: Named-tuple API (public despite the underscore).
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
#: Private members of other libraries that sowlib uses knowingly, with the reason.
THIRD_PARTY_PRIVATE = {
    # pyspark's Arrow collect: one job over all partitions, the route toArrow() takes.
    ("sowlib/spark/sink.py", "_collect_as_arrow"),
    # the JVM handle, to read the Spark version and the active session's settings.
    ("sowlib/spark/sink.py", "_jvm"),
    # pyspark's DDL parser for a schema string (no public equivalent before 3.5).
    ("sowlib/spark/columns.py", "_parse_datatype_string"),
}


def _modules() -> dict[str, Path]:
    # A C extension is known by its stub (its imports are the stub's).
    stubs = [p for p in PACKAGE.rglob("*.pyi") if not p.with_suffix(".py").exists()]
    out = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *stubs]):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 2 and (PACKAGE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imports(module: str) -> Iterator[tuple[int, str, ast.ImportFrom | ast.Import]]:
    """``(line, imported sowlib module, node)`` for every import anywhere in ``module``."""
    is_package = MODULES[module].name == "__init__.py"
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sowlib" or alias.name.startswith("sowlib."):
                    target = _resolve(alias.name)
                    if target:
                        yield node.lineno, target, node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            if base != "sowlib" and not base.startswith("sowlib."):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in MODULES else _resolve(base)
                if target:
                    yield node.lineno, target, node


def _graph() -> dict[str, set[str]]:
    return {m: {t for _l, t, _n in _imports(m) if t != m} for m in MODULES}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    missing = sorted({_unit(m) for m in MODULES} - set(LAYERS))
    assert missing == [], f"place these in LAYERS: {missing}"


def test_imports_go_down_the_layers() -> None:
    bad = []
    for module in MODULES:
        unit = _unit(module)
        for line, target, _node in _imports(module):
            other = _unit(target)
            if other != unit and LAYERS[other] >= LAYERS[unit]:
                bad.append(f"{MODULES[module].name}:{line} {module} -> {target}")
    assert bad == []


def test_no_import_circle_by_any_reading() -> None:
    assert _circles(_graph()) == []


def test_the_circle_check_sees_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_forbidden_edges(module: str) -> None:
    unit = _unit(module)
    banned = FORBIDDEN.get(unit, [])
    only = ONLY.get(unit)
    for line, target, _node in _imports(module):
        if target == module:
            continue
        hit = [
            b for b in banned if target == b or target.startswith(b if b.endswith(".") else b + ".")
        ]
        assert not hit, f"{module}:{line} imports {target} (forbidden: {hit})"
        if only is not None:
            assert _unit(target) in only, f"{module}:{line} imports {target}"


def _private_members(tree: ast.Module) -> set[str]:
    """Private names the module's own classes define (methods, attributes, slots)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("_")
            and node.value.isidentifier()
        ):
            names.add(node.value)  # __slots__ entries, attrs aliases
    return {n for n in names if n.startswith("_")}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reaches(tree: ast.Module, rel: str) -> Iterator[str]:
    """Each place ``tree`` (the module at ``rel``) uses another module's private name."""
    own = _private_members(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sowlib"):
            for alias in node.names:
                if _is_private(alias.name):
                    yield f"{rel}:{node.lineno} from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            value = node.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            name = node.attr
            if name in NAMEDTUPLE_API or name in own or (rel, name) in THIRD_PARTY_PRIVATE:
                continue
            yield f"{rel}:{node.lineno} {ast.unparse(node)}"


def test_no_private_name_is_used_across_modules() -> None:
    found = [
        reach
        for module, path in MODULES.items()
        for reach in private_reaches(_tree(module), str(path.relative_to(PACKAGE.parent)))
    ]
    assert found == []


def test_the_private_check_sees_each_kind_of_reach() -> None:
    source = (
        "import sowlib.x as x\n"
        "from sowlib.y import _z, __all__\n"
        "class A:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def same(self, other):\n"
        "        return other._mine + self._mine + other.__class__.__name__.count('')\n"
        "def f(obj, rec):\n"
        "    return x._hidden(), obj._theirs, rec._replace(a=1)\n"
    )
    found = [r.split(" ", 1)[1] for r in private_reaches(ast.parse(source), "m.py")]
    assert sorted(found) == ["from sowlib.y import _z", "obj._theirs", "x._hidden"]


def test_no_module_exceeds_600_lines() -> None:
    long = {
        m: n
        for m, p in MODULES.items()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}
