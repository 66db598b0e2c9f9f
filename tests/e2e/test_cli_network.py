"""``ai-coding network``: a session's sandbox network grants from a shell, through the real supervisor,
loop and tools service (``tools.sandbox.network: proxy``): allow a host for the session, see it
listed, revoke it; a denied host is not granted and the command exits 1 with the reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"name": "hello", "text": "hi"}]) as server:
        yield server


def test_a_user_grants_lists_and_revokes_a_host_for_a_session_from_the_shell(env: dict[str, Any]) -> None:
    workspace: Path = env["workspace"]
    config: Path = env["config"]
    config.write_text(config.read_text() + "tools:\n  sandbox:\n    network: proxy\n    deny_domains: [denied.test]\n")
    ran = cli("run", "-w", str(workspace), "hello", cwd=workspace)
    assert ran.returncode == 0, ran.stderr
    [row] = json.loads(cli("sessions", "list", "-w", str(workspace), "--json", cwd=workspace).stdout)
    sid = row["id"]

    def network(*args: str) -> tuple[int, dict[str, Any], str]:
        done = cli("network", *args, "--session", sid[:8], "-w", str(workspace), "--json", cwd=workspace)
        return done.returncode, json.loads(done.stdout or "{}"), done.stderr

    code, data, err = network("allow", "pkgs.example.test")
    assert code == 0 and data["granted"] == ["pkgs.example.test:443", "pkgs.example.test:80"], (data, err)
    assert data["proxy"] is True
    code, data, _ = network("list")
    assert code == 0 and data["granted"] == ["pkgs.example.test:443", "pkgs.example.test:80"]
    code, data, _ = network("allow", "denied.test")
    assert code == 1 and data["error"] == "refused"
    code, data, _ = network("revoke", "pkgs.example.test")
    assert code == 0 and data["granted"] == []
    shown = cli("network", "list", "--session", sid, "-w", str(workspace), cwd=workspace).stdout
    assert "allowed for this session: none" in shown
