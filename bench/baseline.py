"""Run an older commit of this project beside the working tree, in the same bench run.

A bench given ``--base REV`` checks REV out in a temporary git worktree (removed afterwards), and
runs both trees' ``ai-coding`` the same way: this virtualenv's interpreter with ``PYTHONPATH`` set
to the tree, calling the console script its pyproject declares (so neither uses the editable install's
entry script), from a working directory outside
both trees (``python -m`` puts the current directory first on ``sys.path``: the supervisor starts
each service with ``python -m MODULE serve NAME``). Figures are then taken in pairs, the
base and the head alternating, so a drift in the machine's speed hits both.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def entry_point(root: Path) -> tuple[str, str]:
    """The ``ai-coding`` console script's ``(module, function)`` as the tree's pyproject declares it."""
    import tomllib

    spec = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["ai-coding"]
    module, _, func = spec.partition(":")
    return module, func


@dataclass(frozen=True)
class Tree:
    """One checkout of the project: ``label`` is ``head`` or the base revision."""

    label: str
    root: Path

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, "PYTHONPATH": f"{self.root}{os.pathsep}{self.root / 'protos'}"}

    def cli(self, *args: str, python_flags: tuple[str, ...] = ()) -> list[str]:
        """The tree's console script, as pip's generated script runs it."""
        module, func = entry_point(self.root)
        launch = f"import sys; sys.argv[0] = 'ai-coding'; from {module} import {func}; sys.exit({func}())"
        return [sys.executable, *python_flags, "-c", launch, *args]


@contextlib.contextmanager
def trees(base_rev: str) -> Iterator[list[Tree]]:
    """``[base, head]`` (base first), or ``[head]`` alone when ``base_rev`` is empty."""
    head = Tree("head", ROOT)
    if not base_rev:
        yield [head]
        return
    where = Path(tempfile.mkdtemp(prefix="aic-base-", dir="/tmp")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), base_rev],
                   check=True, capture_output=True)
    try:
        yield [Tree(base_rev, where), head]
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                       capture_output=True)
        shutil.rmtree(where.parent, ignore_errors=True)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def figure(name: str, unit: str, values: dict[str, list[float]], target: str, scale: float = 1.0) -> str:
    """One line: the head's median, its target, the base's median and head/base (median of pair ratios)."""
    labels = list(values)
    head = values["head"]
    text = f"{name:<34} {med(head) * scale:9.1f} {unit}  (target {target}"
    base = [lab for lab in labels if lab != "head"]
    if base:
        old = values[base[0]]
        ratios = [h / b for h, b in zip(head, old, strict=False) if b]
        text += f"; at {base[0]} {med(old) * scale:.1f} {unit}, head/base {med(ratios):.2f}x"
    return text + f"; median of {len(head)}, {load()})"
