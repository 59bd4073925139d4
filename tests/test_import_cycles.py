"""Imports only go one way: no import cycle in mino_core or a plugin package, and plugins
import only mino_core's public API (``from mino_core import NAME``, NAME in ``__all__``).

Read from the source (ast), not by importing: every ``import`` counts, the ones inside
functions too (a deferred import is still a dependency, it only moves the cost), except
``if TYPE_CHECKING:`` blocks. A cycle is a strongly connected group of modules.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [(ROOT, "mino_core"), (ROOT / "plugins/mino-tools-fs/src", "mino_tools_fs"),
            (ROOT / "plugins/mino-memory-files/src", "mino_memory_files"),
            (ROOT / "plugins/mino-memory-graph/src", "mino_memory_graph")]
# Packages allowed an import cycle (deferred imports count): none. The graph plugin's three
# were broken apart (errors, vectors and shared_open at the bottom; the consolidate
# command with the other commands; a call's subject with the reflection).
KNOWN: dict[str, list[set[str]]] = {}


def _modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _imports(name: str, path: Path, is_package: bool, known, deferred: bool = True):
    """(module imported, where) for each import of a module of the same package."""
    found: list[tuple[str, int]] = []

    def resolve(target: str) -> str | None:
        while target and target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        return target if target in known and target != name else None

    def visit(nodes) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.extend((t, node.lineno) for a in node.names if (t := resolve(a.name)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name if is_package else name.rsplit(".", 1)[0]
                    for _ in range(node.level - 1):
                        here = here.rsplit(".", 1)[0]
                    base = f"{here}.{node.module}" if node.module else here
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if (t := resolve(sub if sub in known else base)):
                        found.append((t, node.lineno))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not deferred:
                continue
            else:
                visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _graph(root: Path, package: str, deferred: bool = True) -> dict[str, set[str]]:
    known = _modules(root, package)
    return {m: {t for t, _ in _imports(m, p, ip, known, deferred)} for m, (p, ip) in known.items()}


@pytest.mark.parametrize("root,package", PACKAGES, ids=[p for _, p in PACKAGES])
def test_no_import_cycle(root, package):
    assert _cycles(_graph(root, package, deferred=False)) == [], "a cycle at import time"
    short = [{m.removeprefix(package + ".") for m in group} for group in _cycles(_graph(root, package))]
    grown = [sorted(g) for g in short if not any(g <= known for known in KNOWN.get(package, []))]
    assert grown == [], f"new import cycles in {package}"


def test_the_checker_finds_a_cycle(tmp_path):
    """The check itself can fail: two modules importing each other inside functions."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    assert _cycles(_graph(tmp_path, "pkg")) == [{"pkg.a", "pkg.b"}]
    assert _cycles(_graph(tmp_path, "pkg", deferred=False)) == []


@pytest.mark.parametrize("root,package", PACKAGES[1:], ids=[p for _, p in PACKAGES[1:]])
def test_plugins_import_only_the_public_api_of_mino_core(root, package):
    import mino_core

    wrong = []
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("mino_core"):
                names = {a.name for a in node.names}
                if node.module != "mino_core" or not names <= set(mino_core.__all__):
                    wrong.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import "
                                 f"{', '.join(sorted(names))}")
            elif isinstance(node, ast.Import) and any(a.name.startswith("mino_core.") for a in node.names):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: import of a mino_core module")
    assert wrong == []


def test_the_core_imports_no_plugin():
    plugins = {p for _, p in PACKAGES[1:]}
    wrong = []
    for path in sorted((ROOT / "mino_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                      if n.split(".")[0] in plugins]
    assert wrong == []


# The graph plugin's layers, lowest first: a module imports only from its own layer or a
# lower one (deferred imports count). ``store`` is the facade over the state and recall,
# ``plugin`` the hooks over everything.
GRAPH_LAYERS = ["core", "journal", "text", "state", "recall", "store", "loop", "cli", "plugin"]


def test_the_graph_plugin_imports_only_downwards():
    root = ROOT / "plugins/mino-memory-graph/src"
    graph = _graph(root, "mino_memory_graph")
    prefix = "mino_memory_graph."

    def layer(module: str) -> int | None:
        if module == "mino_memory_graph":
            return None  # the package itself: a lazy Store export
        return GRAPH_LAYERS.index(module.removeprefix(prefix).split(".")[0])

    upward = [f"{a} -> {b}" for a, deps in graph.items() for b in deps
              if b.startswith(prefix) and layer(a) is not None and layer(b) is not None
              and layer(b) > layer(a)]
    assert upward == []
    flat = sorted(p.stem for p in (root / "mino_memory_graph").glob("*.py"))
    assert flat == ["__init__", "plugin", "store"]  # every other module sits in a layer

