"""``ai-coding acp``'s session controls against the real services and the scripted fake model: a mode
switch to our ``auto`` permission mode (no permission request), the todo list as the ACP plan, the loop's
slash commands as available commands answered in the prompt, an MCP server the editor passes joining
through the gateway, and session list / close / resume."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from clients.acp.mcp import scoped_name
from services.fake_model import FakeModelServer
from tests.e2e.test_acp_bad_input import RawEditor
from tests.e2e.test_cli_process_control import env

__all__ = ["env"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"


def servers(rdir: Path) -> dict[str, int]:
    with grpc.insecure_channel(f"unix:{rdir / 'mcp_gateway.sock'}") as channel:
        stub = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
        return {s.name: s.state for s in stub.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers}


def wait_connected(rdir: Path, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = servers(rdir)
        if states.get(name) == mcp_gateway_pb2.SERVER_STATE_CONNECTED:
            return
        time.sleep(0.2)
    raise AssertionError(f"{name} never connected: {states}")


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer(script("editor-demo")) as server:
        yield server


def script(editor_server: str) -> list[dict[str, Any]]:
    """The turns of the test; ``editor_server``: the gateway's name of the editor's server."""
    return [
        {"name": "todo", "match": "plan it", "tool_calls": [{"name": "todo_write", "arguments": {
            "add": [{"content": "write the fix"}, {"content": "run the tests"}]}}]},
        {"name": "tick", "tool_calls": [{"name": "todo_write", "arguments": {
            "update": [{"id": "1", "status": "completed"}, {"id": "2", "status": "in_progress"}]}}]},
        {"name": "run", "tool_calls": [{"name": "bash", "arguments": {"command": "echo auto-$((1+1))"}}]},
        {"name": "end", "match": "auto-2", "tool_calls": [{"name": "todo_write", "arguments": {
            "update": [{"id": "2", "status": "completed"}]}}]},
        {"name": "said", "text": "All set."},
        {"name": "mcp", "match": "echo via the editor", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": editor_server, "tool": "echo", "input": {"text": "ping"}}}]},
        {"name": "mcp-said", "match": "echo: ping", "text": "The editor's server said ping."},
    ]


def updates_until_answer(editor: RawEditor, ident: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(session/update payloads, requests the agent sent, the answer to ``ident``) in arrival order."""
    updates, requests = [], []
    while True:
        message = editor.expect(lambda m: True)
        if message.get("method") == "session/update":
            updates.append(message["params"]["update"])
        elif "method" in message:
            requests.append(message)
        elif message.get("id") == ident:
            return updates, requests, message


def test_auto_mode_the_todo_plan_slash_commands_editor_mcp_servers_and_session_list_close_resume(env: dict[str, Any],
                                                                                           model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    with RawEditor(workspace) as editor:
        editor.initialize()
        editor.send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": [
            {"name": "editor-demo", "command": sys.executable, "args": [str(DEMO), "stdio"], "env": []}]}})
        updates, _, answer = updates_until_answer(editor, 2)
        sid = answer["result"]["sessionId"]
        editor_demo = scoped_name("editor-demo", sid)  # the editor's server runs for this session alone
        model.load_script(script(editor_demo))
        editor.send({"id": 3, "method": "session/set_mode", "params": {"sessionId": sid, "modeId": "auto"}})
        updates, _, answer = updates_until_answer(editor, 3)
        assert answer["result"] == {}
        editor.send({"id": 4, "method": "session/set_mode", "params": {"sessionId": sid, "modeId": "yolo"}})
        more, _, bad = updates_until_answer(editor, 4)
        assert bad["error"]["code"] == -32602 and "confirm" in bad["error"]["message"]
        updates += more
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "auto"} in updates

        editor.send({"id": 5, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "plan it and run it"}]}})
        updates, requests, answer = updates_until_answer(editor, 5)
        assert answer["result"] == {"stopReason": "end_turn"}
        assert requests == []  # auto mode: the echo ran without a permission request
        plans = [[(e["content"], e["status"]) for e in u["entries"]] for u in updates if u["sessionUpdate"] == "plan"]
        assert plans[0] == [("write the fix", "pending"), ("run the tests", "pending")]
        assert plans[-1] == [("write the fix", "completed"), ("run the tests", "completed")]
        assert any(u["sessionUpdate"] == "tool_call" and u["kind"] == "think" for u in updates)
        ran = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and "auto-2" in str(u.get("content"))]
        assert ran and ran[-1]["status"] == "completed"

        editor.send({"id": 6, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/permissions"}]}})
        updates, _, answer = updates_until_answer(editor, 6)
        assert answer["result"] == {"stopReason": "end_turn"}
        assert "permissions: auto" in "".join(u["content"]["text"] for u in updates
                                              if u["sessionUpdate"] == "agent_message_chunk")

        wait_connected(env["rdir"], editor_demo)
        editor.send({"id": 12, "method": "session/prompt", "params": {
            "sessionId": sid, "prompt": [{"type": "text", "text": "echo via the editor server"}]}})
        updates, _, answer = updates_until_answer(editor, 12)
        assert answer["result"] == {"stopReason": "end_turn"}
        called = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
        assert any("echo: ping" in str(u["content"]) for u in called)
        assert not (env["config"].parent / "mcp.local.yaml").exists()  # kept for the gateway's run only

        editor.send({"id": 7, "method": "session/list", "params": {"cwd": str(workspace)}})
        listed = editor.answer_of(7)["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid] and listed[0]["title"].startswith("plan it")
        editor.send({"id": 8, "method": "session/close", "params": {"sessionId": sid}})
        assert editor.answer_of(8)["result"] == {}
        assert editor_demo not in servers(env["rdir"])  # closing the session stopped its server
        editor.send({"id": 9, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/status"}]}})
        assert editor.answer_of(9)["error"]["code"] == -32002
        editor.send({"id": 10, "method": "session/resume", "params": {"sessionId": sid, "cwd": str(workspace)}})
        resumed = editor.answer_of(10)["result"]
        assert resumed["modes"]["currentModeId"] == "auto"  # the loop kept the session's mode
        editor.send({"id": 11, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/status"}]}})
        updates, _, answer = updates_until_answer(editor, 11)
        assert sid in "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        assert editor.hang_up(timeout=60) == 0
