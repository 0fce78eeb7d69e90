"""The floor plan of pods/ (docs/development.md): packages import downwards only, and nothing in a cycle.

Each module's imports are read with `ast` (inside functions too) and mapped to packages; the table
below is the whole set of allowed package-to-package edges. A new import that breaks it fails here.
"""

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PODS = ROOT / "pods"
BASE = ("errors", "io", "cli", "extras", "plugins", "settings")  # the base modules directly in pods/
ALLOWED = {  # package -> packages it may import (itself always allowed)
    "commands": {"studies", "firstcontact", "evaluation", "run", "config", "core", "rewards", "data", "backends",
                 "integrations", "analysis", "base"},  # the `pods` command's subcommands: entry points
    "studies": {"evaluation", "run", "config", "core", "rewards", "data", "backends", "analysis", "base"},  # many runs
    "firstcontact": {"run", "config", "core", "rewards", "data", "backends", "base"},  # gpu-check, the size check
    "evaluation": {"run", "config", "core", "rewards", "data", "backends", "base"},
    "run": {"config", "core", "rewards", "data", "backends", "base"},
    "config": {"core", "rewards", "data", "backends", "base"},
    "data": {"rewards", "base"},
    "backends": {"core", "base"},
    "integrations": {"core", "rewards", "base"},
    "analysis": {"core", "base"},  # replay re-applies the rules of core
    "core": {"base"},
    "rewards": {"base"},
    "base": set(),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PODS.rglob("*.py")}


def package(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in BASE:
        return "base"  # pods/__init__.py and the base modules
    return parts[1]


def imports(module: str) -> list[tuple[str, bool]]:
    """(imported pods module, inside a function?) for every import statement of `module`."""
    path = MODULES[module]
    here = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []

    def resolve(name: str) -> str | None:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((resolve(a.name), inside) for a in child.names if a.name.startswith("pods"))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(here.split(".")[: len(here.split(".")) - child.level + 1] + ([base] if base else []))
                if base.startswith("pods"):
                    found.extend((resolve(f"{base}.{a.name}") or resolve(base), inside) for a in child.names)
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return [(m, inside) for m, inside in found if m and m != module]


@functools.cache
def graph() -> dict[str, list[tuple[str, bool]]]:
    """{module: its imports} (parsed when a test first asks, not when the file is collected)."""
    return {m: imports(m) for m in MODULES}


def test_pods_holds_the_floor_plan_and_nothing_else():
    """The base modules and one package per floor of ALLOWED: a new top-level entry is a change to this plan."""
    entries = {p.name for p in PODS.iterdir() if p.name not in ("__pycache__", "_config")}
    assert entries == {"__init__.py", *(f"{b}.py" for b in BASE), *(set(ALLOWED) - {"base"})}


def test_packages_import_downwards_only():
    bad = sorted({f"{m} -> {t}" for m, edges in graph().items() for t, _ in edges
                  if package(t) != package(m) and package(t) not in ALLOWED[package(m)]})
    assert bad == []
    base_imports = sorted({f"{m} -> {t}" for m, edges in graph().items() if package(m) == "base" and m != "pods"
                           for t, _ in edges if t != "pods.errors"})
    assert base_imports == []  # the base modules import pods.errors only


def test_no_pods_import_inside_a_function():
    """Imports inside functions defer heavy third-party libraries only; pods/__init__.py's lazy API uses importlib.
    The subcommands (pods/commands, entry points) may defer the library until their arguments are read."""
    inside = sorted(f"{m} -> {t}" for m, edges in graph().items() for t, in_function in edges
                    if in_function and package(m) != "commands")
    assert inside == []


def test_no_import_cycle_between_modules():
    edges = defaultdict(set)
    for m, found in graph().items():
        edges[m] |= {t for t, _ in found}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in MODULES:
        if v not in index:
            connect(v)
    assert cycles == []


def test_pods_never_imports_the_checkouts_own_folders():
    """rewards/ (your plug-ins), scripts/, benchmarks/ and the entry points are loaded by path, never imported by pods."""
    top = {"rewards", "scripts", "benchmarks", "train", "tests"}
    bad = []
    for m, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bad += [f"{m} imports {n}" for n in names if n.split(".")[0] in top]
    assert bad == []
