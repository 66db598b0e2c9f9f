"""``ai-coding acp`` given bad input: each gets the protocol's error or a clean end, the loop keeps the
session, nothing hangs; an approval the vanished editor left open is answered from another client
(real supervisor, loop, tools and sandbox; the scripted fake model)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import env
from tests.e2e.test_loop_control import reply_to_approvals
from tests.service.loop.harness import Conversation, finished, status_name

__all__ = ["env"]

WAIT_S = 60.0


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "ask", "match": "vanish", "tool_calls": [{"name": "bash", "arguments": {"command": "echo left-$((2+3))"}}]},
        {"name": "after", "match": "left-5", "text": "Finished without the editor."},
    ]) as server:
        yield server


class RawEditor:
    """An editor that writes whatever bytes it likes to ``ai-coding acp`` and reads its lines."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "acp"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def write(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def expect(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = self.lines.get(timeout=WAIT_S)
            if wanted(message):
                return message

    def answer_of(self, ident: int) -> dict[str, Any]:
        return self.expect(lambda m: m.get("id") == ident and "method" not in m)

    def initialize(self) -> dict[str, Any]:
        """``initialize`` as request 1; its result."""
        self.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        result: dict[str, Any] = self.answer_of(1)["result"]
        return result

    def hang_up(self, timeout: float = WAIT_S) -> int:
        """The editor ends: its side of stdin closes. The adapter's exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        """Kill the adapter if it still runs (a test that failed half-way)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> RawEditor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def test_bad_lines_get_protocol_errors_and_a_vanished_editor_leaves_the_turn_to_attach(
        env: dict[str, Any]) -> None:
    workspace: Path = env["workspace"]
    with RawEditor(workspace) as editor:
        editor.write(b"{this is not json\n")
        assert editor.expect(lambda m: "error" in m)["error"]["code"] == -32700
        editor.write(b"[1, 2]\n")
        assert editor.expect(lambda m: "error" in m)["error"]["code"] == -32600
        editor.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        assert editor.answer_of(1)["result"]["protocolVersion"] == 1
        editor.send({"id": 2, "method": "session/fly", "params": {}})
        assert editor.answer_of(2)["error"]["code"] == -32601
        editor.send({"id": 3, "method": "session/prompt",
                     "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}})
        unknown = editor.answer_of(3)["error"]
        assert unknown["code"] == -32002 and "session/new" in unknown["message"]
        editor.send({"id": 4, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}})
        assert editor.answer_of(4)["error"]["code"] == -32602
        editor.send({"id": 5, "method": "session/load",
                     "params": {"sessionId": "0000dead", "cwd": str(workspace), "mcpServers": []}})
        assert editor.answer_of(5)["error"]["code"] == -32002

        editor.send({"id": 6, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
        sid = editor.answer_of(6)["result"]["sessionId"]
        editor.send({"id": 7, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "vanish mid-turn"}]}})
        asked = editor.expect(lambda m: m.get("method") == "session/request_permission")
        assert asked["params"]["toolCall"]["rawInput"]["command"] == "echo left-$((2+3))"
        assert editor.hang_up() == 0  # the editor vanishes without answering

    with grpc.insecure_channel(f"unix:{env['rdir'] / 'loop.sock'}") as channel:
        stub = loop_pb2_grpc.AgentLoopStub(channel)
        listed = stub.ListSessions(loop_pb2.ListSessionsRequest(workspace=str(workspace)), timeout=10).sessions
        assert sid in [s.session_id for s in listed]
        other = Conversation(stub, loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=sid, after_seq=0)))
        events = other.drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_ALLOW_ONCE))
    assert status_name(finished(events)) == "completed"
    assert finished(events).text == "Finished without the editor."
