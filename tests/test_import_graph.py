"""The package's layers run one way: a test of the import graph built from the source.

Every module of ddlx belongs to one layer of `LAYERS` (bottom first). A module may import from its
own layer and the layers below it, never from one above; within a package no two modules import
each other, directly or round a longer loop. Imports count wherever they are written (inside
functions too), and so do the names a package offers through `lazy_exports` (they are imports on
first use). Imports under `if TYPE_CHECKING:` are annotations only and never run; they are left out.

Two things reach upward by design, and only these: the trace and format plugins are found by
package discovery (`ddlx.datasets.plugins`, which imports `ddlx.traces.<folder>` and
`ddlx.formats.<folder>` by name), and the root package's `ddlx.open` / `ddlx.report` read the API
on first use.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Bottom first. A layer is a list of module prefixes; the longest matching prefix decides.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("ddlx", "ddlx.errors", "ddlx.atomic", "ddlx.jsontext", "ddlx.lazy", "ddlx.outputs", "ddlx.frames",
              "ddlx.progress",
              "ddlx.display")),
    ("datasets", ("ddlx.datasets",)),
    ("placement", ("ddlx.placement",)),
    ("analysis", ("ddlx.analysis",)),
    ("predict", ("ddlx.predict",)),
    ("simulate", ("ddlx.simulate",)),
    ("reports", ("ddlx.reports",)),
    ("traces", ("ddlx.traces",)),
    ("formats", ("ddlx.formats",)),
    ("api", ("ddlx.api",)),
    ("cli", ("ddlx.cli", "ddlx.__main__")),
]

#: The root package's lazy face of the API (`ddlx.open`, `ddlx.report`): read on first use only.
ROOT_LAZY_EXPORTS = "ddlx"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = ["ddlx", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_sources(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file, for every module of the package (tests, benchmarks and docs left out)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in {"tests", "benchmarks", "docs", "build", "setup.py"} or rel[0].startswith("."):
            continue
        if any(part.endswith(".egg-info") for part in rel):
            continue
        found[module_name(path, root)] = path
    return found


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _source(node: ast.ImportFrom, package: str) -> str:
    """The module a `from ... import` statement written in `package` reads from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports_of(name: str, path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """The ddlx modules `name` imports, with the line of each import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _package_of(name, path)
    skipped = _type_checking_nodes(tree)
    found: list[tuple[str, int]] = []

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package)
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                       for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_exports"
              and name != ROOT_LAZY_EXPORTS and len(node.args) == 2 and isinstance(node.args[1], ast.Dict)):
            targets = [f"ddlx.{value.value.partition(':')[0]}" for value in node.args[1].values
                       if isinstance(value, ast.Constant)]
        else:
            continue
        for target in targets:
            if target == "ddlx" or target.startswith("ddlx."):
                resolved = resolve(target)
                if resolved and resolved != name:
                    found.append((resolved, node.lineno))
    return found


def import_graph(root: Path = ROOT) -> dict[str, list[tuple[str, int]]]:
    """Module -> the ddlx modules it imports (with lines), plus each module's parent packages
    (importing `a.b.c` runs `a/b/__init__.py` first)."""
    sources = package_sources(root)
    modules = set(sources)
    graph: dict[str, list[tuple[str, int]]] = {}
    for name, path in sources.items():
        edges = imports_of(name, path, modules)
        parent = name.rpartition(".")[0]
        while parent and parent != "ddlx":
            edges.append((parent, 0))
            parent = parent.rpartition(".")[0]
        graph[name] = edges
    return graph


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (module.startswith(prefix + ".") and prefix != "ddlx"):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def upward_imports(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    found = []
    for module, edges in sorted(graph.items()):
        for target, line in edges:
            if layer_of(module) is None or layer_of(target) is None:
                continue  # test_every_module_has_a_layer names it
            if layer_of(target) > layer_of(module):
                found.append(f"{module}:{line} imports {target} ({LAYERS[layer_of(module)][0]} -> "
                             f"{LAYERS[layer_of(target)][0]})")
    return found


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), over the imports written
    in the source (line > 0): a package's `__init__` offering its own modules while they run it first
    is how a package works, not a loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    adjacency = {module: sorted({t for t, line in edges if t in graph and line}) for module, edges in graph.items()}

    def visit(node: str) -> None:
        work = [(node, iter(adjacency[node]))]
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(adjacency[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[current] = min(low[current], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(adjacency):
        if module not in index:
            visit(module)
    return found


GRAPH = import_graph()


def test_every_module_has_a_layer():
    assert [module for module in GRAPH if layer_of(module) is None] == []


def test_no_upward_import():
    found = upward_imports(GRAPH)
    assert found == [], "imports that reach a higher layer:\n" + "\n".join(found)


def test_no_cycle_between_modules():
    found = cycles(GRAPH)
    assert found == [], "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_cycle_between_packages():
    packages: dict[str, set[str]] = defaultdict(set)
    for module, edges in GRAPH.items():
        for target, _ in edges:
            a, b = ".".join(module.split(".")[:2]), ".".join(target.split(".")[:2])
            if a != b:
                packages[a].add(b)
    graph = {package: [(t, 1) for t in targets] for package, targets in packages.items()}
    for package in list(graph):
        for target, _ in graph[package]:
            graph.setdefault(target, [])
    assert cycles(graph) == []


def test_datasets_imports_no_higher_package():
    higher = ("ddlx.analysis", "ddlx.reports", "ddlx.formats", "ddlx.predict", "ddlx.simulate", "ddlx.placement",
              "ddlx.traces", "ddlx.api", "ddlx.cli")
    found = [f"{module}:{line} imports {target}" for module, edges in GRAPH.items()
             if module.startswith("ddlx.datasets") for target, line in edges if target.startswith(higher)]
    assert found == []


# ------------------------------------------------------------------------------------------------
# The checks can fail: a planted package with an upward import and a loop
# ------------------------------------------------------------------------------------------------


def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path)


def test_a_planted_upward_import_inside_a_function_is_found(tmp_path):
    graph = _plant(tmp_path, {
        "__init__.py": "", "datasets/__init__.py": "", "analysis/__init__.py": "",
        "analysis/model.py": "X = 1\n",
        "datasets/catalog.py": "def f():\n    from ddlx.analysis.model import X\n    return X\n",
    })
    assert upward_imports(graph) == [
        "ddlx.datasets.catalog:2 imports ddlx.analysis.model (datasets -> analysis)"]


def test_type_checking_imports_are_left_out(tmp_path):
    graph = _plant(tmp_path, {
        "__init__.py": "", "datasets/__init__.py": "", "analysis/__init__.py": "", "analysis/model.py": "",
        "datasets/catalog.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from ddlx.analysis.model import X\n",
    })
    assert upward_imports(graph) == []


def test_a_planted_loop_is_found(tmp_path):
    graph = _plant(tmp_path, {
        "__init__.py": "", "analysis/__init__.py": "",
        "analysis/a.py": "from ddlx.analysis import b\n",
        "analysis/b.py": "def f():\n    from ddlx.analysis.c import y\n",
        "analysis/c.py": "from ddlx.analysis.a import x\n",
    })
    assert cycles(graph) == [["ddlx.analysis.a", "ddlx.analysis.b", "ddlx.analysis.c"]]


def test_lazy_exports_and_parent_packages_count(tmp_path):
    graph = _plant(tmp_path, {
        "__init__.py": "", "lazy.py": "",
        "datasets/__init__.py": "from ddlx.lazy import lazy_exports\n"
                                "__all__, __getattr__ = lazy_exports(__name__, {'x': 'reports.model'})\n",
        "datasets/catalog.py": "", "reports/__init__.py": "", "reports/model.py": "",
    })
    assert ("ddlx.reports.model", 2) in graph["ddlx.datasets"]
    assert ("ddlx.datasets", 0) in graph["ddlx.datasets.catalog"]
    assert any("ddlx.datasets:2 imports ddlx.reports.model" in line for line in upward_imports(graph))


@pytest.mark.parametrize("module, layer", [("ddlx", "base"), ("ddlx.errors", "base"),
                                           ("ddlx.datasets.catalog", "datasets"), ("ddlx.traces.pai.reader", "traces"),
                                           ("ddlx.cli.main", "cli")])
def test_layer_of(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def _imported_names(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """(file, line, module, name) of every `from ddlx... import name` written in the package."""
    found = []
    for name, path in package_sources(root).items():
        package = _package_of(name, path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(node, package)
            if source == "ddlx" or source.startswith("ddlx."):
                found += [(str(path.relative_to(root)), node.lineno, source, alias.name) for alias in node.names]
    return found


def test_every_imported_name_exists():
    """An import inside a function runs only when the function does; each one names a module and a
    name that exist (a module moved or a name renamed shows here, not in a user's run)."""
    import importlib

    missing = []
    for file, line, source, name in _imported_names():
        try:
            module = importlib.import_module(source)
        except ImportError as exc:
            missing.append(f"{file}:{line}: {source} ({exc})")
            continue
        if not hasattr(module, name):
            try:
                importlib.import_module(f"{source}.{name}")
            except ImportError:
                missing.append(f"{file}:{line}: {source} has no {name}")
    assert missing == [], "\n".join(missing)
