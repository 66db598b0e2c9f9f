"""Nothing of the host reaches the model because a workspace file or link said so: with links the
agent made, `@link` to a key outside and `@dir/secret` through a linked folder are refused (saying
where they lead), and an AGENTS.md the agent wrote imports nothing by absolute path, `~`, `..` or a
link into the config and data dirs. The fake model's request log is checked for every planted marker.

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

MARKERS = {"key": "SSH-KEY-MARKER-1177", "mcp": "MCP-TOKEN-MARKER-2288", "data": "DATA-TOKEN-MARKER-3399",
           "outside": "OUTSIDE-MARKER-4400"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def stack(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with FakeModelServer([]) as model:
        config = isolated_home / ".config" / "ai-coding" / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "default_model: fake\n"
            f"models:\n  fake:\n    provider: generic\n    model: fake-model\n    base_url: {model.url}\n"
            "    api_key: test-key\n    max_retries: 0\nloop:\n  harvest: false\n  mcp: false\n")
        (config.parent / "AGENTS.md").write_text("USER-NOTES-OK\n")  # the user's own file, by its exact name
        (config.parent / "mcp.local.yaml").write_text(f"token: {MARKERS['mcp']}\n")
        data = isolated_home / ".local" / "share" / "ai-coding"
        data.mkdir(parents=True, exist_ok=True)
        (data / "tokens.json").write_text(json.dumps({"t": MARKERS["data"]}))
        ssh = isolated_home / ".ssh"
        ssh.mkdir()
        (ssh / "id_rsa").write_text(MARKERS["key"] + "\n")
        monkeypatch.setenv("AI_CODING_CONFIG", str(config))
        ws = tmp_path / "ws"
        ws.mkdir()
        (tmp_path / "outside.txt").write_text(MARKERS["outside"])
        try:
            yield {"workspace": ws, "model": model, "config": config.parent, "data": data, "ssh": ssh}
        finally:
            cli("down")


def plant(s: dict[str, Any]) -> str:
    notes = (f"WORKSPACE-NOTES-OK\\n@inside.md\\n@{s['config']}/mcp.local.yaml\\n@~/.ssh/id_rsa\\n"
             "@../outside.txt\\n@cfglink\\n@datalink\\n@sshdir/id_rsa\\n")
    return (f"ln -s {s['ssh']}/id_rsa link && ln -s {s['ssh']} sshdir && ln -s {s['config']}/mcp.local.yaml cfglink"
            f" && ln -s {s['data']}/tokens.json datalink && printf 'INSIDE-OK\\n' > inside.md"
            f" && printf '{notes}' > AGENTS.md && echo planted")


@pytest.mark.slow
def test_links_and_imports_the_agent_planted_send_no_host_file_to_the_model(stack: dict[str, Any]) -> None:
    ws, model = stack["workspace"], stack["model"]
    model.load_script([
        {"match": "prepare", "tool_calls": [{"name": "bash", "arguments": {"command": plant(stack)}}]},
        {"match": "planted", "text": "Prepared."},
        {"text": "Hello.", "repeat": "forever"},
    ])
    first = cli("run", "--json", "--auto-approve", "-w", str(ws), "prepare the workspace")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert (ws / "link").is_symlink() and (ws / "sshdir").is_symlink() and (ws / "AGENTS.md").is_file()
    for prompt, leads_to in (("explain @link", "id_rsa"), ("explain @sshdir/id_rsa", "id_rsa"),
                             ("read @cfglink", "the user config"), ("read @datalink", "the ai-coding data dir")):
        refused = cli("run", "--json", "-w", str(ws), prompt)
        assert refused.returncode == 2, refused.stdout + refused.stderr  # bad input: nothing ran, nothing lost
        assert "is not attached" in refused.stderr and leads_to in refused.stderr, refused.stderr
    asked = len(model.chat_requests)
    assert cli("run", "--json", "-w", str(ws), "hello").returncode == 0
    assert len(model.chat_requests) == asked + 1  # the refusals never reached the model
    last = json.dumps(model.chat_requests[-1].body)
    assert "WORKSPACE-NOTES-OK" in last and "INSIDE-OK" in last and "USER-NOTES-OK" in last  # the control
    everything = json.dumps([r.body for r in model.chat_requests])
    for name, marker in MARKERS.items():
        assert marker not in everything, name
