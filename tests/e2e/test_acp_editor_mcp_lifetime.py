"""An editor's MCP servers live as long as the ``ai-coding acp`` that brought them: kill -9 the adapter
(what an editor that crashes leaves) and the gateway stops its session's servers, the server process
included; a new adapter's ``session/load`` brings them again. ``ai-coding mcp status`` lists them under
their session, never as the user's own (real supervisor, loop and gateway; the demo MCP server over stdio)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import mcp_gateway_pb2

from clients.acp.mcp import scoped_name
from services.fake_model import FakeModelServer
from tests.e2e.test_acp_bad_input import RawEditor
from tests.e2e.test_acp_session_controls import DEMO, servers, updates_until_answer, wait_connected
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"name": "idle", "text": "nothing to do"}]) as server:
        yield server


def _processes_with(mark: str) -> list[int]:
    """Pids whose environment carries ``mark`` (the demo server the editor's entry started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return [pid for pid in found if pid != os.getpid()]


def _connected(rdir: Path, name: str) -> bool:
    try:
        return servers(rdir).get(name) == mcp_gateway_pb2.SERVER_STATE_CONNECTED
    except Exception:  # the gateway is starting again
        return False


def _until(what: str, check: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _open(editor: RawEditor, workspace: Path, mark: str, load: str = "") -> str:
    editor.initialize()
    demo = [{"name": "editor-demo", "command": sys.executable, "args": [str(DEMO), "stdio"],
             "env": [{"name": "ACP_LIFETIME_MARK", "value": mark}]}]
    params: dict[str, Any] = {"cwd": str(workspace), "mcpServers": demo}
    editor.send({"id": 2, "method": "session/load" if load else "session/new",
                 "params": {**params, "sessionId": load} if load else params})
    _, _, answer = updates_until_answer(editor, 2)
    assert "result" in answer, answer
    return load or str(answer["result"]["sessionId"])


def test_a_killed_adapter_takes_its_editor_servers_with_it_and_a_load_brings_them_back(
        env: dict[str, Any], model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    mark = f"mark-{uuid.uuid4().hex}"
    with RawEditor(workspace) as first:
        sid = _open(first, workspace, mark)
        first.send({"id": 3, "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}})
        assert updates_until_answer(first, 3)[2]["result"] == {"stopReason": "end_turn"}  # the session is saved
        name = scoped_name("editor-demo", sid)
        wait_connected(env["rdir"], name)
        assert _processes_with(mark), "the editor's server process never started"

        # Listed under its session, not as the user's own.
        status = cli("mcp", "status", "--json", cwd=workspace)
        [listed] = [s for s in json.loads(status.stdout)["servers"] if s["name"] == name]
        assert listed["session"] == sid
        shown = cli("mcp", "status", cwd=workspace).stdout
        assert f"session {sid}'s editor servers" in shown and shown.index(sid) < shown.index(name), shown

        first.proc.kill()  # kill -9 of the adapter the editor started: no session/close, no stdin end
        first.proc.wait(timeout=30)
        _until("the killed adapter's editor server is still in the gateway", lambda: name not in servers(env["rdir"]))
        _until("the killed adapter's editor server process is still running", lambda: not _processes_with(mark))

    with RawEditor(workspace) as second:
        assert _open(second, workspace, mark, load=sid) == sid
        wait_connected(env["rdir"], name)  # the new adapter's load brought it again
        assert _processes_with(mark)

        # The gateway dies under the live adapter (the supervisor starts a new one): the adapter
        # notices its hold ended and brings the server back into the new gateway.
        status = json.loads(cli("status", "--json", cwd=workspace).stdout)
        os.kill(int(status["services"]["mcp_gateway"]["pid"]), signal.SIGKILL)
        _until("the restarted gateway never got the editor's server back",
               lambda: _connected(env["rdir"], name), seconds=90)
        assert json.loads(cli("status", "--json", cwd=workspace).stdout)["services"]["mcp_gateway"]["restarts"] >= 1
        assert second.hang_up(timeout=60) == 0  # a clean end stops it too
        _until("the closed adapter's editor server is still in the gateway", lambda: name not in servers(env["rdir"]))
