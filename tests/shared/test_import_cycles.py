"""No import cycle anywhere in the tree: ``lint-imports`` (``.importlinter``) keeps the floors apart, and this
checks every module within and outside them, the packages, tests, benchmarks, tools and examples alike.

The packages' graph is grimp's (the one import-linter builds). The scripts outside the packages import their
siblings by bare name (``import harness`` in benchmarks/: a script's folder is first on ``sys.path``), which
grimp cannot follow, so the whole tree's graph is read from the source here: every import statement, those
inside functions too (a deferred import closes a cycle as well as a top-level one)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import grimp

PACKAGES = ("shared", "curator_service", "modeler_client")
ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    """``a/b/c.py`` -> ``a.b.c``; ``a/b/__init__.py`` -> ``a.b`` (paths relative to the root)."""
    parts = path.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_import_graph(root: Path, files: list[Path]) -> dict[str, set[str]]:
    """Each module of ``files`` (relative to ``root``) and the modules of ``files`` it imports.

    A name resolves from the root (``shared.gp.ucb``) or, in a folder that is not a package, from that folder
    (``harness`` beside the script); ``from a import b`` is module ``a.b`` when there is one, else ``a``."""
    modules = {module_name(path): path for path in files}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else name
        folder = "" if (root / path.parent / "__init__.py").exists() else ".".join(path.parent.parts)
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *filter(None, [base])])
                targets = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
            else:
                continue
            for target in filter(None, targets):
                for candidate in (target, f"{folder}.{target}" if folder else None):
                    while candidate and candidate not in modules:
                        candidate = candidate.rpartition(".")[0]
                    if candidate:
                        if candidate != name or target == name:
                            edges[name].add(candidate)
                        break
    return edges


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one importing itself (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1 or module in edges[module]:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_a_cycle_and_only_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def grimp_edges() -> dict[str, set[str]]:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    return {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}


def tracked_python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [Path(line) for line in listed.stdout.splitlines()]


def test_no_module_of_the_packages_is_part_of_an_import_cycle():
    assert import_cycles(grimp_edges()) == []


def test_the_source_graph_is_grimps_on_the_packages():
    """The reader of import statements finds the edges grimp finds, no more and no fewer (on grimp's modules: it
    leaves out the folders without ``__init__.py``, the migrations)."""
    expected = grimp_edges()
    files = [path for path in tracked_python_files() if module_name(path) in expected]
    assert source_import_graph(ROOT, files) == expected


def test_the_source_graph_follows_a_script_folders_bare_imports(tmp_path):
    scripts = {"tools/a.py": "import b\n", "tools/b.py": "def f():\n    import a\n", "tools/c.py": "import os\n",
               "pkg/__init__.py": "", "pkg/x.py": "from . import y\nimport b\n", "pkg/y.py": "from pkg.x import f\n"}
    for path, text in scripts.items():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text)
    edges = source_import_graph(tmp_path, [Path(path) for path in scripts])
    assert edges["tools.a"] == {"tools.b"} and edges["tools.b"] == {"tools.a"} and edges["tools.c"] == set()
    assert edges["pkg.x"] == {"pkg.y"}  # a package's module has no bare sibling imports
    assert import_cycles(edges) == [["pkg.x", "pkg.y"], ["tools.a", "tools.b"]]


def test_no_module_anywhere_in_the_tree_is_part_of_an_import_cycle():
    """Benchmarks, tools, examples and tests too: scripts that import each other cannot be read one at a time."""
    assert import_cycles(source_import_graph(ROOT, tracked_python_files())) == []
