"""What a client command is run with is what its turn uses, with the services already up: a user
config edited meanwhile, an environment override for one run only (also when it was the run that
started the services), a restart-only section said in one line, a hand-edited mcp.local.yaml."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ai_coding.v1 import memory_pb2 as pb
from ai_coding.v1.memory_pb2_grpc import MemoryStub

from services.fake_model import FakeModelServer
from services.kernel.channels import sync_channel
from services.kernel.endpoints import endpoint_for
from tests.support.cli_stack import cli
from tests.support.on_demand import started

DEMO_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
SCRIPT = {"models": ["alpha", "beta", "gamma"], "steps": [{"text": "answered", "repeat": "forever"}]}


@dataclass
class Box:
    env: dict[str, str]
    config: Path
    workspace: Path
    model: FakeModelServer

    def write_config(self, model_id: str, extra: str = "") -> None:
        self.config.write_text(f"models:\n  main: {{provider: generic, model: {model_id}, base_url: "
                               f"'{self.model.url}', api_key: x}}\nloop: {{harvest: false}}\n{extra}")

    def run(self, *args: str, env: dict[str, str] | None = None) -> tuple[str, str]:
        """One headless turn; the model id its request named, and what the run printed."""
        before = len(self.model.chat_requests)
        done = cli(env or self.env, "run", "-w", str(self.workspace), *args, "hello")
        assert done.returncode == 0, done.stderr
        return str(self.model.chat_requests[before].body["model"]), done.stdout + done.stderr


@pytest.fixture
def box() -> Iterator[Box]:
    base = Path(tempfile.mkdtemp(prefix="aic-follow-", dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    model = FakeModelServer(SCRIPT).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(base / "run"), AI_CODING_CONFIG=str(home / ".config" / "ai-coding" / "config.yaml"), COLUMNS="200")
    workspace = base / "ws"
    workspace.mkdir()
    (home / ".config" / "ai-coding").mkdir(mode=0o700)
    b = Box(env, home / ".config" / "ai-coding" / "config.yaml", workspace, model)
    b.write_config("alpha")
    try:
        yield b
    finally:
        cli(env, "down", timeout=60)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_a_config_edited_while_the_services_run_is_used_by_the_next_turn(box: Box) -> None:
    assert box.run()[0] == "alpha"
    box.write_config("beta")
    assert box.run()[0] == "beta"


def test_an_environment_override_is_used_by_that_run_only_with_the_services_up(box: Box) -> None:
    assert cli(box.env, "up").returncode == 0
    override = {**box.env, "AI_CODING_MODEL": "gamma", "AI_CODING_BASE_URL": box.model.url, "AI_CODING_API_KEY": "x"}
    assert box.run(env=override)[0] == "gamma"
    assert box.run()[0] == "alpha"


def test_services_started_by_an_overriding_run_do_not_impose_it_on_the_next(box: Box) -> None:
    override = {**box.env, "AI_CODING_MODEL": "gamma", "AI_CODING_BASE_URL": box.model.url, "AI_CODING_API_KEY": "x"}
    assert box.run(env=override)[0] == "gamma"  # this run started the services with those variables
    box.write_config("beta")
    assert box.run()[0] == "beta"


def test_a_key_variable_exported_after_the_services_started_is_used(box: Box) -> None:
    assert cli(box.env, "up").returncode == 0
    box.config.write_text(box.config.read_text().replace("api_key: x", "api_key: '${AIC_LATE_KEY}'"))
    assert box.run(env={**box.env, "AIC_LATE_KEY": "late"})[0] == "alpha"
    headers = {k.lower(): v for k, v in box.model.chat_requests[-1].headers.items()}  # HTTP names: any case
    assert headers.get("authorization") == "Bearer late"


def _restart_lines(printed: str) -> list[str]:
    return [line for line in printed.splitlines() if "applies only after it restarts" in line]


def test_an_edit_that_needs_a_restart_says_so_in_one_line(box: Box) -> None:
    assert _restart_lines(box.run()[1]) == []
    box.write_config("alpha", "tracing: {otlp: {endpoint: 'http://127.0.0.1:9/v1/traces'}}\n")
    lines = _restart_lines(box.run()[1])
    assert len(lines) == 1 and "`tracing`" in lines[0] and "the loop service" in lines[0], lines
    assert "`ai-coding down`" in lines[0]


def test_an_edit_to_the_tools_section_names_the_tools_service_until_it_restarts(box: Box) -> None:
    assert _restart_lines(box.run()[1]) == []
    box.write_config("alpha", "tools:\n  sandbox:\n    env_allow: [AIC_EXTRA]\n")
    lines = _restart_lines(box.run()[1])
    assert len(lines) == 1 and "config `tools` changed since the tools service started" in lines[0], lines
    assert "`ai-coding down`" in lines[0]
    assert cli(box.env, "down").returncode == 0
    assert _restart_lines(box.run()[1]) == []  # started again on the edited file: nothing to say


def test_the_memory_service_follows_its_section_without_a_restart(box: Box) -> None:
    assert cli(box.env, "up").returncode == 0
    started(endpoint_for("memory", env=box.env))
    channel = sync_channel(endpoint_for("memory", env=box.env))
    stub = MemoryStub(channel)
    ws = str(box.workspace)
    stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Builds use uv", kind="decision")),
                   timeout=30)
    assert [h.note.text for h in stub.Recall(pb.RecallRequest(workspace=ws, query="builds uv"), timeout=30).hits] == [
        "Builds use uv"]
    box.write_config("alpha", "memory:\n  enabled: false\n")
    off = stub.Recall(pb.RecallRequest(workspace=ws, query="builds uv"), timeout=30)
    assert list(off.hits) == [] and "switched off" in off.rendered
    box.write_config("alpha")
    assert len(stub.Recall(pb.RecallRequest(workspace=ws, query="builds uv"), timeout=30).hits) == 1
    channel.close()
    assert _restart_lines(box.run()[1]) == []  # nothing to restart for it


def _servers(box: Box) -> dict[str, dict[str, object]]:
    status = cli(box.env, "mcp", "status", "--json")
    return {s["name"]: s for s in json.loads(status.stdout)["servers"]}


def test_a_hand_edited_mcp_local_yaml_is_picked_up_and_a_changed_entry_says_to_restart(box: Box) -> None:
    assert cli(box.env, "up").returncode == 0
    assert _servers(box) == {}
    sidecar = box.config.parent / "mcp.local.yaml"
    sidecar.write_text(f"servers:\n  - name: demo\n    command: ['{sys.executable}', '{DEMO_SERVER}', 'stdio']\n")
    deadline = time.monotonic() + 60
    while _servers(box).get("demo", {}).get("state") != "connected" and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _servers(box)["demo"]["state"] == "connected"
    listed = cli(box.env, "mcp", "list")
    assert "demo__add" in listed.stdout or "add" in listed.stdout, listed.stdout

    sidecar.write_text(f"servers:\n  - name: demo\n    command: ['{sys.executable}', '{DEMO_SERVER}', 'stdio']\n"
                       "    environment: {DEMO_FLAVOUR: 'changed'}\n")
    _, printed = box.run()
    assert "degraded · mcp:demo: edited in mcp.local.yaml; `ai-coding down` applies it" in printed


def test_trusting_the_project_while_the_services_run_starts_its_mcp_servers_at_the_next_command(box: Box) -> None:
    assert cli(box.env, "up").returncode == 0
    (box.workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj demo": {
        "command": sys.executable, "args": [str(DEMO_SERVER), "stdio"]}}}))
    _, untrusted = box.run()
    assert "not approved for this workspace" in untrusted and "ai-coding trust -w" in untrusted
    assert "proj-demo" not in _servers(box)
    # The decision is the user's, per workspace, recorded outside it: the running services follow it.
    approved = cli(box.env, "trust", "-w", str(box.workspace), "--yes")
    assert approved.returncode == 0, approved.stderr
    box.run()
    deadline = time.monotonic() + 60
    while _servers(box).get("proj-demo", {}).get("state") != "connected" and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _servers(box)["proj-demo"]["state"] == "connected"
