"""The package's shape, read from its source: no import cycles, no borrowed privates, short modules.

import-linter (``scripts/check.sh``) enforces the layer diagram between packages; these
tests cover what a layer contract cannot see:

- cycles *inside* a layer, counting every import: module level, inside functions and
  under ``if TYPE_CHECKING:`` (a cycle hidden behind a late import is still a cycle);
- a private name (``_x``) used outside the module that defines it, whether imported
  (``from m import _x``) or reached as an attribute (``m._x``), and a private module
  (``pkg._m``) imported from outside ``pkg``;
- module length (the house limit is 450 lines).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dgl_chunked"
MAX_LINES = 450


@dataclass
class Module:
    """One source module: its dotted name, whether it is a package ``__init__``, its AST."""

    name: str
    is_package: bool
    tree: ast.Module
    lines: int


def _modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        text = path.read_text()
        found[name] = Module(name, is_package, ast.parse(text), text.count("\n") + 1)
    return found


MODULES = _modules()


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _import_targets(module: Module) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import, at any depth."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in MODULES:
                    yield submodule, None, node.lineno
                else:
                    yield target, alias.name, node.lineno


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for module in MODULES.values():
        for target, _, _ in _import_targets(module):
            if target in MODULES and target != module.name:
                graph[module.name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_module_owner(target: str) -> str | None:
    """The package a private module belongs to (``a.b._c`` -> ``a.b``), else None."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _is_private(part) and i > 0:
            return ".".join(parts[:i])
    return None


def _borrowed_privates(module: Module) -> Iterator[str]:
    aliases: dict[str, str] = {}
    for target, name, line in _import_targets(module):
        owner = _private_module_owner(target)
        if target.startswith("dgl_chunked") and owner and not module.name.startswith(owner):
            yield f"{module.name}:{line} imports private module {target}"
        if name is not None and _is_private(name) and target.startswith("dgl_chunked"):
            yield f"{module.name}:{line} imports {target}.{name}"
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _is_private(node.attr)
        ):
            yield f"{module.name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}"


def test_the_graph_sees_the_whole_package() -> None:
    """Guard the guards: the walk finds the package's modules and the edges between them."""
    assert {"dgl_chunked", "dgl_chunked.cli", "dgl_chunked.io", "dgl_chunked.storage"} <= set(MODULES)
    graph = _graph()
    assert "dgl_chunked.dispatch" in graph["dgl_chunked"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_of_any_kind() -> None:
    """Function-level and TYPE_CHECKING imports count: a late import hides a cycle, it does not break it."""
    assert _cycles(_graph()) == []


def test_no_private_name_is_used_outside_its_module() -> None:
    problems = [p for module in MODULES.values() for p in _borrowed_privates(module)]
    assert problems == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_short(name: str) -> None:
    assert MODULES[name].lines <= MAX_LINES, (
        f"{name}: {MODULES[name].lines} lines (limit {MAX_LINES}); split it by concern"
    )
