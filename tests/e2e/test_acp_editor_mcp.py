"""The MCP servers an editor passes in ``session/new`` are that session's alone: the official ACP
TypeScript SDK's client (tests/node/acp_client.mjs) opens a session with our demo server over stdio;
another session neither sees it nor can call it by name (through the real loop, and straight at the
gateway), the session itself calls it, and ``session/close`` stops it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from clients.acp.mcp import scoped_name
from clients.cli import control
from services.fake_model import FakeModelServer
from services.kernel.channels import sync_channel
from tests.e2e.test_acp_editor import AGENT, DRIVER, NODE, pytestmark
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env", "pytestmark"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"name": "idle", "text": "nothing to do"}]) as server:
        yield server


def _wait_file(path: Path, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.05)
    return path.read_text()


def _servers(stub: mcp_gateway_pb2_grpc.McpGatewayStub) -> dict[str, int]:
    return {s.name: s.state for s in stub.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers}


def _call(stub: mcp_gateway_pb2_grpc.McpGatewayStub, server: str, session_id: str) -> Any:
    request = mcp_gateway_pb2.McpCallToolRequest(call_id="c1", server=server, tool="echo", session_id=session_id,
                                                 input_json=json.dumps({"text": "ping"}), timeout_seconds=20)
    return [item.result for item in stub.CallTool(request, timeout=30) if item.HasField("result")][-1]


def _script(model: FakeModelServer, server: str) -> None:
    model.load_script([
        {"name": "call", "match": "call the editor", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": server, "tool": "echo", "input": {"text": "ping"}}}]},
        {"name": "done", "text": "called"},
    ])


def _tool_result(model: FakeModelServer) -> str:
    [result] = [m["content"] for m in model.chat_requests[-1].body["messages"] if m.get("role") == "tool"]
    return str(result)


def test_an_editors_mcp_server_is_its_sessions_alone_and_stops_when_the_session_closes(
        env: dict[str, Any], model: FakeModelServer, tmp_path: Path) -> None:
    workspace: Path = env["workspace"]
    hand = tmp_path / "handshake"
    hand.mkdir()
    servers = [{"name": "demo", "command": sys.executable, "args": [str(DEMO), "stdio"], "env": []}]
    proc = subprocess.Popen([str(NODE), str(DRIVER), "mcp", str(workspace), json.dumps(servers), str(hand), "--",
                             *AGENT], cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sid = _wait_file(hand / "session", proc)
        name = scoped_name("demo", sid)
        channel = sync_channel(control.resolve(workspace).endpoints["mcp_gateway"])
        stub = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
        deadline = time.monotonic() + 60
        while _servers(stub).get(name) != mcp_gateway_pb2.SERVER_STATE_CONNECTED:
            assert time.monotonic() < deadline, _servers(stub)
            time.sleep(0.1)

        def catalog(session_id: str) -> set[str]:
            got = stub.GetCatalog(mcp_gateway_pb2.GetCatalogRequest(session_id=session_id), timeout=10)
            return {e.server for e in got.entries}

        assert name in catalog(sid)
        assert name not in catalog("another-session") and name not in catalog("")
        assert "echo: ping" in _call(stub, name, sid).output
        stranger = _call(stub, name, "another-session")
        assert stranger.error.code == "mcp_unknown_server" and "ping" not in stranger.output

        # Through the loop: another session's turn cannot reach it; the editor's session's turn can.
        _script(model, name)
        other = cli("run", "--auto-approve", "-w", str(workspace), "call the editor's server", cwd=workspace)
        assert "called" in other.stdout, other.stdout + other.stderr
        assert "mcp_unknown_server" in _tool_result(model) and "echo: ping" not in _tool_result(model)
        _script(model, name)
        (hand / "release").touch()  # the editor's session prompts, then closes
        _wait_file(hand / "closed", proc)
        assert "echo: ping" in _tool_result(model)
        assert name not in _servers(stub)  # session/close stopped it
        channel.close()
        (hand / "end").touch()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    report = json.loads(out.strip().splitlines()[-1])
    assert "error" not in report, (report.get("error"), err[-3000:])
    assert report["schemaErrors"] == [] and report["exitCode"] == 0
    assert report["stopReasons"] == ["end_turn"] and [p["chose"] for p in report["permissions"]] == ["allow_once"]
