"""The loop package reads bottom-up: folder by folder, no import runs back up (no circle of folders),
and its contracts (core/) import neither a feature package nor another service."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LOOP = ROOT / "services" / "loop"
# Below every feature: what core/ may import besides itself.
CORE_MAY_IMPORT = ("services.loop.core", "services.loop.policy", "services.kernel")


def room(module: str) -> str | None:
    """The top-level entry of services/loop a module lives in (a folder or a root file)."""
    parts = module.split(".")
    if parts[:2] != ["services", "loop"] or len(parts) < 3:
        return None
    return parts[2]


def imported_modules(path: Path) -> list[str]:
    """Every ``services.*`` module ``path`` imports, at any depth (TYPE_CHECKING and function-level too)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("services."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("services.")]
    return found


def folder_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in LOOP.rglob("*.py"):
        source = path.relative_to(LOOP).parts[0].removesuffix(".py")
        edges = graph.setdefault(source, set())
        for module in imported_modules(path):
            target = room(module)
            if target is not None and target != source:
                edges.add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Groups of folders that reach each other (each a set of two or more)."""
    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {node: reach(node) for node in graph}
    groups = {frozenset({n, *(m for m in reached[n] if n in reached.get(m, set()))})
              for n in graph if n in reached[n]}
    return [set(g) for g in groups]


def test_no_folder_of_the_loop_imports_one_that_imports_it_back() -> None:
    assert circles(folder_graph()) == []


def test_the_guard_sees_a_circle_of_folders() -> None:
    assert circles({"core": {"plans"}, "plans": {"core"}, "turn": {"core"}}) == [{"core", "plans"}]


def test_core_imports_no_feature_and_no_other_service() -> None:
    leaks = [f"{path.relative_to(ROOT)}: {module}" for path in (LOOP / "core").rglob("*.py")
             for module in imported_modules(path) if not module.startswith(CORE_MAY_IMPORT)]
    assert leaks == []
