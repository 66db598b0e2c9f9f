"""An MCP server's elicitation reaches the user of ``ai-coding run`` as questions on the terminal
(real CLI in a pseudo-terminal, supervisor, loop, gateway and our demo MCP server over stdio), and a
``run`` with no terminal declines it without asking."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
SIGNUP = {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "demo", "tool": "signup", "input": {}}}]}


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "signup", **SIGNUP},
        {"name": "done", "match": "signed up Ada on the pro plan", "text": "Ada is on pro."},
        {"name": "signup-again", **SIGNUP},
        {"name": "declined", "match": "signup declined", "text": "Nobody could answer."},
    ]) as server:
        yield server


def _add_demo(config: Path) -> None:
    config.write_text(config.read_text() + "mcp:\n  servers:\n    - name: demo\n      type: local\n"
                      f"      command: [{sys.executable}, {DEMO}, stdio]\n      auto_approve: true\n")


def _wait_connected(name: str, timeout: float = 60) -> None:
    """Poll ``mcp status`` until ``name`` is connected: a run started before then gets no MCP
    catalog on its first step, so the auto_approve server's call would be put to the user."""
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        status = cli("mcp", "status", "--json")
        if status.returncode == 0:
            states = {s["name"]: s["state"] for s in json.loads(status.stdout)["servers"]}
            if states.get(name) == "connected":
                return
        time.sleep(0.3)
    raise AssertionError(f"MCP server {name!r} never connected: {states}")


def test_run_asks_an_mcp_servers_questions_on_its_terminal_and_declines_without_one(env: dict[str, Any]) -> None:
    _add_demo(env["config"])
    assert cli("up").returncode == 0
    workspace: Path = env["workspace"]
    _wait_connected("demo")
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "run", "-w", str(workspace), "sign me up"],
                          env=dict(os.environ), encoding="utf-8", timeout=90, dimensions=(40, 160))
    try:
        child.expect_exact("MCP server 'demo' asks: Sign up for the demo")
        child.expect_exact("(1/2) Name: Your name")
        child.expect_exact("answer›")
        child.sendline("Ada")
        child.expect_exact("(2/2) Plan: Which plan")
        child.expect_exact("2. pro")
        child.expect_exact("answer›")
        child.sendline("2")
        child.expect_exact("Ada is on pro.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    # No terminal (stdin is /dev/null): nobody is asked, the server hears "decline".
    done = cli("run", "-w", str(workspace), "sign me up")
    assert done.returncode == 0, done.stderr
    assert "Nobody could answer." in done.stdout and "asks:" not in done.stdout
