"""Assets of ``ai-coding demo``: a tiny project with a failing test and the model script that fixes it.

``DEMO_PROMPT`` is the user request the script's first step expects;
``copy_demo_project`` puts a fresh copy of the project in a workspace.
"""

from __future__ import annotations

import shutil
from pathlib import Path

_HERE = Path(__file__).resolve().parent

DEMO_PROMPT = "One test in this project is failing. Find the bug, fix it, and run the tests to confirm."


def demo_project_dir() -> Path:
    """The bundled project (calc.py with an off-by-one bug, and test_calc.py)."""
    return _HERE / "project"


def demo_script_path() -> Path:
    """The fake-model script that replays an agent reading, fixing and testing the project."""
    return _HERE / "script.yaml"


def copy_demo_project(destination: Path) -> Path:
    """Copy the project's files into ``destination`` (created if needed) and return it."""
    destination.mkdir(parents=True, exist_ok=True)
    for source in sorted(demo_project_dir().iterdir()):
        if source.is_file():
            shutil.copy2(source, destination / source.name)
    return destination
