"""A real tool service (tests/support/tool_service.py) and a workspace for these tests, plus
``serve_tools``: `ai-coding serve tools` as its own process with a given user config."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.tool_service import make_service, service, workspace
from tests.support.tools_harness import ToolServiceClient

__all__ = ["make_service", "serve_tools", "service", "workspace"]


@pytest.fixture
def serve_tools(isolated_home: Path, short_dir: Path) -> Iterator[Callable[[str], ToolServiceClient]]:
    """Start `ai-coding serve tools` (the isolated HOME, runtime dir ``short_dir/run``) with the user
    config text given; stopped at teardown."""
    procs: list[tuple[subprocess.Popen[bytes], ToolServiceClient]] = []

    def start(user_config: str = "") -> ToolServiceClient:
        config_dir = isolated_home / ".config" / "ai-coding"
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.yaml").write_text(user_config)
        exe = Path(sys.executable).parent / "ai-coding"
        with open(short_dir / "serve.log", "ab") as log:
            proc = subprocess.Popen([str(exe), "serve", "tools"], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
        client = ToolServiceClient(str(short_dir / "run" / "tools.sock"))
        procs.append((proc, client))
        client.connect(alive=lambda: proc.poll() is None)
        return client

    yield start
    for proc, client in procs:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
