"""Memory and the MCP gateway on demand, through the real CLI: what a user sees, and what the model gets.

The turn after memory stopped for idleness still carries the user's notes (the call that starts it waits
for it); with no MCP server configured nothing ever starts the gateway, and once one is configured the
next session starts it and the model is offered its tools. Real supervisor, services and CLI processes,
a real stdio MCP server; the fake model.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import memory_pb2, memory_pb2_grpc

from clients.cli.runtime import wait_until
from services.kernel.endpoints import parse_endpoint
from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.on_demand import started

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
IDLE = 1.0


@pytest.fixture
def stack() -> Iterator[Stack]:
    with cli_stack("aic-ondemand-", [{"text": "ok", "repeat": "forever"}],
                   extra_config=f"supervisor: {{on_demand_idle_seconds: {IDLE}}}\n") as running:
        yield running


def _services(stack: Stack) -> dict[str, dict[str, Any]]:
    done = cli(stack.env, "status", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    services: dict[str, dict[str, Any]] = json.loads(done.stdout)["services"]
    return services


def _health(stack: Stack, name: str) -> str:
    return str(_services(stack)[name]["health"])


def _run(stack: Stack, workspace: Path, text: str) -> list[dict[str, Any]]:
    done = cli(stack.env, "run", "--json", "-w", str(workspace), text)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _request_text(stack: Stack) -> str:
    return json.dumps(stack.model.chat_requests[-1].body)


def test_the_first_turn_after_memory_stopped_for_idleness_still_carries_the_users_notes(
        stack: Stack, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    endpoint = _services(stack)["memory"]["endpoint"]
    started(parse_endpoint("memory", endpoint))  # up started it for the turn to come (loop.memory is on)
    with grpc.insecure_channel(endpoint.replace("unix://", "unix:")) as channel:
        memory_pb2_grpc.MemoryStub(channel).WriteNote(memory_pb2.WriteNoteRequest(
            workspace=str(workspace), note=memory_pb2.NoteCandidate(
                text="Release builds always use uv, never pip", kind="decision")), timeout=30)
    assert wait_until(lambda: _health(stack, "memory") == "ON_DEMAND", 30, interval=0.2)  # stopped, idle

    events = _run(stack, workspace, "hello")

    assert not [e for e in events if "degraded" in e], events
    assert "Release builds always use uv, never pip" in _request_text(stack)
    assert _health(stack, "memory") == "SERVING"
    assert _health(stack, "mcp_gateway") == "ON_DEMAND"  # no MCP server: nothing asked for it
    log = (Path(stack.env["AI_CODING_RUNTIME_DIR"]) / "logs" / "supervisor.log").read_text()
    assert "memory stopped after 1 s idle" in log


def test_the_gateway_starts_once_an_mcp_server_is_configured_and_its_tools_reach_the_model(
        stack: Stack, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _run(stack, workspace, "hello")
    assert _health(stack, "mcp_gateway") == "ON_DEMAND"
    assert "demo__echo" not in _request_text(stack) and "mcp_call" not in _request_text(stack)

    sidecar = Path(stack.env["AI_CODING_CONFIG"]).with_name("mcp.local.yaml")
    sidecar.write_text(json.dumps({"servers": [
        {"name": "demo", "type": "local", "command": [sys.executable, str(DEMO), "stdio"]}]}))

    def offered() -> bool:
        _run(stack, workspace, "hello again")
        return "echo" in _request_text(stack) and "demo" in _request_text(stack)

    # The next session starts the gateway; its server connects in the background, so a later step
    # is the first to list its tools.
    assert wait_until(offered, 60, interval=0.5), _request_text(stack)[-3000:]
    gateway = _services(stack)["mcp_gateway"]
    assert gateway["health"] == "SERVING" and gateway["pid"]
    time.sleep(IDLE * 3)  # past its idle time, but it holds a server: it stays
    assert _services(stack)["mcp_gateway"]["pid"] == gateway["pid"]


def test_status_and_logs_say_a_service_waits_for_its_first_call_without_starting_it(stack: Stack) -> None:
    status = cli(stack.env, "status")
    assert status.returncode == 0, status.stdout + status.stderr  # ON_DEMAND is ready, not down
    assert [line.split()[:3] for line in status.stdout.splitlines() if "mcp_gateway" in line] == [
        ["mcp_gateway", "-", "ON_DEMAND"]]
    logs = cli(stack.env, "logs", "mcp_gateway")
    assert logs.returncode != 0
    assert "starts on demand, with the first call that needs it" in logs.stderr
    assert _services(stack)["mcp_gateway"]["pid"] is None  # asking did not start it


def test_doctor_starts_a_service_waiting_on_demand_to_prove_it_can_start(stack: Stack, tmp_path: Path) -> None:
    assert _services(stack)["mcp_gateway"]["pid"] is None
    doctor = cli(stack.env, "doctor", "-w", str(tmp_path))
    line = next((line for line in doctor.stdout.splitlines() if "service mcp_gateway" in line), "")
    assert "SERVING (started on demand for this check)" in line, doctor.stdout + doctor.stderr
    assert _services(stack)["mcp_gateway"]["health"] == "SERVING"
