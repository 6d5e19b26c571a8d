"""The import rules of docs/development.md, checked over every import in src/kwire, lazy ones included.

Layers import one way: cli -> spark -> client -> log -> records -> protocol, and broker -> log
(the cli starts brokers). ``errors`` and ``_wire`` sit below every layer. No two modules may
import each other, directly or through others (a cycle), whether at import time or in a function
(imports under ``if TYPE_CHECKING:`` never run and do not count).
"""

from __future__ import annotations

import ast
from pathlib import Path

import kwire

ROOT = Path(kwire.__file__).parent

#: What each layer may import, besides itself and the shared bottom (errors, _wire, the package).
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "records": {"protocol"},
    "log": {"records", "protocol"},
    "client": {"log", "records", "protocol"},
    "broker": {"log", "records", "protocol"},
    "spark": {"client", "log", "records", "protocol"},
    "cli": {"spark", "client", "broker", "log", "records", "protocol"},
}
BOTTOM = {"errors", "_wire", "_lazy", "__init__", "__main__"}

#: Cycles there are today, to be broken (issue 18); the test fails on any other, and when one of
#: these is gone (then remove it here).
KNOWN_CYCLES = [
    ["kwire.spark._internal_topics", "kwire.spark._registry", "kwire.spark._source"],
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: set[str] = set()
    # imports under `if TYPE_CHECKING:` never run: annotations, not dependencies
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("kwire"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("kwire"):
                found.add(target)
                # `from kwire.x import _mod` imports a module too
                found.update(f"{target}.{a.name}" for a in node.names)
    return found


def modules() -> dict[str, set[str]]:
    names = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in names.items():
        graph[name] = {target for target in imports_of(path) if target in names and target != name}
    return graph


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_layers_import_one_way() -> None:
    wrong = []
    for name, targets in modules().items():
        own = layer(name)
        if own not in ALLOWED:
            continue
        for target in targets:
            other = layer(target)
            if other == own or other in BOTTOM or target == "kwire":
                continue
            if other not in ALLOWED[own]:
                wrong.append(f"{name} imports {target} ({own} -> {other})")
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = modules()
    # package __init__ files re-export their modules: an edge into a package's own __init__ from
    # inside it is how Python loads it, not a cycle of the code
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
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

    import sys

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert sorted(cycles) == KNOWN_CYCLES
