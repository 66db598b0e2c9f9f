"""A stdio MCP server starts with nothing of its working directory picked up implicitly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from services.mcp_gateway.connection import stdio_parameters
from services.mcp_gateway.settings import ServerSettings


def test_a_stdio_server_gets_pythonsafepath_and_a_path_without_relative_or_workspace_entries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f".::bin:{ws / 'bin'}:/usr/bin:/bin")
    params = stdio_parameters(ServerSettings(name="s", command=(sys.executable, "-m", "srv"), cwd=str(ws),
                                             environment={"OWN": "kept"}))
    env = params.env or {}
    assert env["PYTHONSAFEPATH"] == "1" and env["OWN"] == "kept"
    assert env["PATH"].split(":") == ["/usr/bin", "/bin"]


def test_a_server_program_that_cannot_run_is_named_before_anything_is_spawned(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(FileNotFoundError):
        stdio_parameters(ServerSettings(name="s", command=(str(tmp_path / "missing"),)))
    with pytest.raises(PermissionError):
        stdio_parameters(ServerSettings(name="s", command=(str(script),)))
    script.chmod(0o755)
    relative = stdio_parameters(ServerSettings(name="s", command=("./server.sh", "--x"), cwd=str(tmp_path)))
    assert relative.args[-2:] == ["./server.sh", "--x"]  # behind the launcher, started from its cwd
