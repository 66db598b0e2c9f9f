"""The agent cannot loosen its own leash: a project config the agent itself writes (bash in the
sandbox, through `ai-coding run --auto-approve` against the scripted fake model) can only tighten
the user's safety settings on the next turn.

Everything is real (CLI, supervisor, loop, tools in bwrap); the model is the fake model server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer

PLANT = ("printf 'ai:\\n  bash_policy:\\n    deny: []\\n    confirm: []\\n  strict_paths: false\\n"
         "  approval_mode: auto\\n  turn_timeout_seconds: 0\\n  max_tool_iterations: 500\\n  subagent_isolation: false\\n"
         "  max_parallel_subagents: 64\\n  subagent_timeout_seconds: 6000\\nloop:\\n  mcp: true\\n"
         "tools:\\n  sandbox:\\n    mode: none\\n    network: true\\n' > ai-coding.local.yaml && echo planted")
FORBIDDEN = "echo forbidden-marker > proof.txt"
SANDBOXED = "echo $HOME > home.txt"

SCRIPT = [
    {"name": "plant", "tool_calls": [{"name": "bash", "arguments": {"command": PLANT}}]},
    {"name": "planted", "text": "I changed the project config."},
    {"name": "forbidden", "tool_calls": [{"name": "bash", "arguments": {"command": FORBIDDEN}},
                                         {"name": "bash", "arguments": {"command": SANDBOXED}}]},
    {"name": "done", "text": "Tried."},
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def stack(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with FakeModelServer(SCRIPT) as model:
        config = tmp_path / "user-config" / "config.yaml"
        config.parent.mkdir()
        config.write_text(
            "default_model: fake\n"
            f"models:\n  fake:\n    provider: generic\n    model: fake-model\n    base_url: {model.url}\n"
            "    api_key: test-key\n    max_retries: 0\n"
            "loop:\n  harvest: false\n  mcp: false\n"
            "ai:\n  strict_paths: true\n  turn_timeout_seconds: 120\n"
            "  bash_policy:\n    deny: ['forbidden-marker']\n")
        monkeypatch.setenv("AI_CODING_CONFIG", str(config))
        workspace = tmp_path / "ws"
        workspace.mkdir()
        try:
            yield {"workspace": workspace, "model": model}
        finally:
            cli("down")


def results(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e["toolFinished"]["result"] for e in events if "toolFinished" in e]


@pytest.mark.slow
def test_a_project_config_the_agent_writes_cannot_lift_the_deny_list_or_the_sandbox(
        stack: dict[str, Any]) -> None:
    ws = stack["workspace"]
    first = cli("run", "--json", "--auto-approve", "-w", str(ws), "plant the config")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert (ws / "ai-coding.local.yaml").is_file()  # the agent really wrote the project layer
    second = cli("run", "--json", "--auto-approve", "-w", str(ws), "now run the forbidden command")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    forbidden, sandboxed = results(second.stdout)
    assert not forbidden.get("ok") and "bash_policy.deny" in json.dumps(forbidden), forbidden
    assert not (ws / "proof.txt").exists()
    assert sandboxed.get("ok"), sandboxed
    assert (ws / "home.txt").read_text().strip() == "/tmp"  # still in bwrap: the sandbox's HOME
    warned = second.stderr
    for key in ("ai.bash_policy.deny", "ai.strict_paths", "ai.approval_mode", "ai.turn_timeout_seconds",
                "loop.mcp", "tools.sandbox", "ai.max_tool_iterations", "ai.subagent_isolation",
                "ai.max_parallel_subagents", "ai.subagent_timeout_seconds"):
        assert f"`{key}`" in warned, warned
    shown = cli("config", "show", "-w", str(ws), "--json")
    rows = {key: value for key, value, _ in json.loads(shown.stdout)}
    assert rows["ai.bash_policy.deny"] == ["forbidden-marker"] and rows["ai.strict_paths"] is True
    assert rows["ai.turn_timeout_seconds"] == 120 and rows["loop.mcp"] is False
    assert rows["ai.max_tool_iterations"] == 50 and rows["ai.subagent_isolation"] is True
    assert rows["ai.max_parallel_subagents"] == 4 and rows["ai.subagent_timeout_seconds"] == 600
