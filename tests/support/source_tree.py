"""The product's source files, each parsed once per test run: the architecture guards (import
graph, the loop's floors, the turn status producer, the thin client) share these trees."""

from __future__ import annotations

import ast
import functools
import gc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree (read and parsed on the first call only; do not modify it).

    The collector is off meanwhile: CPython 3.11's AST constructor counts its recursion depth, and a
    ``__del__`` that a collection runs in the middle (an asyncio transport an earlier test left to the
    collector) made it fail with "AST constructor recursion depth mismatch" (a SystemError)."""
    source = path.read_text(encoding="utf-8")
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, str(path))
    finally:
        if enabled:
            gc.enable()


def product_files(*folders: str) -> list[Path]:
    """The ``.py`` files under ``folders`` (relative to the repository), generated code left out."""
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))
            if not path.name.endswith(("_pb2.py", "_pb2_grpc.py"))]
