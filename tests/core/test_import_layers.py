"""Imports point down only, and no two modules import each other (directly or around a loop).

The floors (docs/ARCHITECTURE.md, "Layers"): core (1) <- spark (2) <- jobs and the dbt doors (3) <- Airflow (4).
A module may import from its own floor or a lower one.  Every ``import`` statement counts, wherever it sits:
a function-level import is still a dependency (it only runs later), so it can neither point up nor close a
cycle.  The graph is read with ``ast`` from the source tree: no module is imported, no JVM is started.

The failure messages name the modules, files and lines, e.g.::

    upward import: timeweave.spark.backfill (runtime/spark/backfill.py:12, floor 2 spark) imports
    timeweave.jobs.config (floor 3 jobs)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: import name -> folder (setup.py's mapping, plus the dbt plugin and the example DAGs)
ROOTS = {
    "timeweave": REPO / "runtime",
    "timeweave.airflow": REPO / "airflow_plugin",
    "timeweave.dbt_package": REPO / "dbt_macros",
    "dbt_timeweave": REPO / "dbt_timeweave",
    "dags": REPO / "dags",
}
#: (module name prefix, floor, floor name); the longest matching prefix decides.
FLOORS = (
    ("timeweave.core", 1, "core"),
    ("timeweave.spark", 2, "spark"),
    ("timeweave", 2, "spark"),  # the package's lazy facade (runtime/__init__.py) names spark modules
    ("timeweave.jobs", 3, "jobs"),
    ("timeweave.dbt_package", 3, "jobs"),  # the dbt package's generator reads the core and the Spark plan
    ("dbt_timeweave", 3, "jobs"),
    ("timeweave.airflow", 4, "airflow"),
    ("dags", 4, "airflow"),
)
SKIP_PARTS = {"__pycache__", "integration_tests", "sample_data"}


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} ({self.path}:{self.line}) imports {self.target}"


def module_files() -> dict[str, Path]:
    """Every module of ours by import name (a package by its ``__init__.py``)."""
    modules: dict[str, Path] = {}
    for name, folder in ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            if SKIP_PARTS & set(relative.parts):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            full = ".".join([name, *parts])
            if name == "timeweave" and parts and parts[0] in ("airflow", "dbt_package"):
                continue  # not folders of runtime/ (the mapped roots above)
            modules[full] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours ``name`` is, or lives in (``a.b.C`` -> ``a.b`` when ``C`` is no module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported module of ours, line) for every import statement of ``path``, at any depth."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                target = _resolve(f"{base}.{alias.name}", modules) if alias.name != "*" else None
                target = target or _resolve(base, modules)
                if target is not None:
                    yield target, node.lineno


def import_graph() -> list[Edge]:
    modules = module_files()
    edges = []
    for module, path in modules.items():
        for target, line in _imports(module, path, modules):
            if target != module:
                edges.append(Edge(module, target, str(path.relative_to(REPO)), line))
    return edges


def floor(module: str) -> tuple[int, str]:
    matches = [(len(prefix), level, name) for prefix, level, name in FLOORS
               if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module}: no floor; add its folder to FLOORS (docs/ARCHITECTURE.md, Layers)"
    _, level, name = max(matches)
    return level, name


def upward_imports(edges: list[Edge]) -> list[str]:
    found = []
    for edge in edges:
        (source_level, source_name), (target_level, target_name) = floor(edge.source), floor(edge.target)
        if target_level > source_level:
            found.append(f"upward import: {edge.source} ({edge.path}:{edge.line}, floor {source_level} {source_name})"
                         f" imports {edge.target} (floor {target_level} {target_name})")
    return found


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as its modules, sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursive: the graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe_cycle(component: list[str], edges: list[Edge]) -> str:
    members = set(component)
    inside = sorted({str(e) for e in edges if e.source in members and e.target in members})
    return "import cycle between " + ", ".join(component) + ":\n    " + "\n    ".join(inside)


def test_every_module_has_a_floor() -> None:
    for module in module_files():
        floor(module)
    assert "timeweave.core.changelog" in module_files() and "timeweave.airflow.plugin" in module_files()


def test_imports_point_down() -> None:
    found = upward_imports(import_graph())
    assert not found, "imports must point down (core <- spark <- jobs <- airflow):\n" + "\n".join(found)


def test_no_import_cycles() -> None:
    edges = import_graph()
    found = [describe_cycle(c, edges) for c in cycles(edges)]
    assert not found, "\n".join(found)


#: Modules kept only so users' imports of earlier releases work (each name forwarded with a DeprecationWarning).
FORWARDING = ("timeweave.spark.streaming", "timeweave.spark.backfill")
#: Folders of ours beside the packages whose code must import the real modules too.
OTHER_FOLDERS = (REPO / "tests", REPO / "bench")
#: The tests of the forwarding itself: (file, function) that may import a forwarding module.
FORWARDING_TESTS = {
    ("tests/spark/test_host.py", "test_earlier_import_paths_still_resolve"),
    ("tests/spark/test_host.py", "test_earlier_backfill_names_still_resolve"),
}


def forwarding_imports(path: Path, relative: str) -> Iterator[str]:
    """Imports of a :data:`FORWARDING` module in ``path`` (any depth), outside :data:`FORWARDING_TESTS`."""

    def imported(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        return []

    def visit(node: ast.AST, function: str | None) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            for name in imported(child):
                if name in FORWARDING and (relative, inside) not in FORWARDING_TESTS:
                    yield f"{relative}:{child.lineno} imports {name}"
            yield from visit(child, inside)

    yield from visit(ast.parse(path.read_text(), str(path)), None)


def test_nothing_of_ours_imports_the_forwarding_modules() -> None:
    """``spark/streaming.py`` and ``spark/backfill.py`` are for users' code only: our code names the real modules."""
    files = [p for p in module_files().values()]
    files += [p for folder in OTHER_FOLDERS for p in sorted(folder.rglob("*.py")) if not SKIP_PARTS & set(p.parts)]
    found = [hit for path in files for hit in forwarding_imports(path, str(path.relative_to(REPO)))]
    assert not found, "import from the real modules (the forwarding modules are for users' code):\n" + "\n".join(found)


def test_a_forwarding_import_is_found(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("import os\ndef f():\n    from timeweave.spark import streaming as S\n"
                    "from timeweave.spark.backfill import run_slices\nimport timeweave.spark.host\n")
    assert list(forwarding_imports(path, "x.py")) == ["x.py:3 imports timeweave.spark.streaming",
                                                      "x.py:4 imports timeweave.spark.backfill"]


# -- the checker itself: it finds what it is meant to find ------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    modules = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        modules[name] = path
    return modules


def test_a_function_level_import_cycle_is_found(tmp_path: Path) -> None:
    modules = _tree(tmp_path, {
        "timeweave.spark.a": "from timeweave.spark import b\n",
        "timeweave.spark.b": "def f():\n    from timeweave.spark.a import g\n",
        "timeweave.spark.c": "import timeweave.spark.a\n",
    })
    edges = [Edge(m, t, p.name, line) for m, p in modules.items() for t, line in _imports(m, p, modules)]
    assert cycles(edges) == [["timeweave.spark.a", "timeweave.spark.b"]]
    message = describe_cycle(["timeweave.spark.a", "timeweave.spark.b"], edges)
    assert "timeweave.spark.b (b.py:2) imports timeweave.spark.a" in message


@pytest.mark.parametrize(("source", "text", "upward"), [
    ("timeweave.core.x", "def f():\n    from timeweave.spark.y import z\n", True),
    ("timeweave.spark.y", "from ..core import x\n", False),
    ("timeweave.spark.y", "from timeweave.jobs import config\n", True),
    ("timeweave.jobs.config", "import timeweave.airflow.plugin\n", True),
])
def test_an_upward_import_is_found(tmp_path: Path, source: str, text: str, upward: bool) -> None:
    modules = _tree(tmp_path, {"timeweave.core.x": "", "timeweave.spark.y": "", "timeweave.jobs.config": "",
                               "timeweave.airflow.plugin": ""})
    modules[source].write_text(text)
    edges = [Edge(m, t, p.name, line) for m, p in modules.items() for t, line in _imports(m, p, modules)]
    assert bool(upward_imports(edges)) is upward, edges
