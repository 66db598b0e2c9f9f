"""An approval the editor was asked about, answered first by another client (``ai-coding attach``'s
stream): the editor's permission request is cancelled (``$/cancel_request``), its late answer is ignored
and the prompt ends normally (real services, the scripted fake model)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from tests.e2e.test_acp_bad_input import RawEditor
from tests.e2e.test_cli_process_control import env
from tests.e2e.test_loop_control import reply_to_approvals
from tests.service.loop.harness import Conversation

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "ask", "match": "answer elsewhere",
         "tool_calls": [{"name": "bash", "arguments": {"command": "echo elsewhere-$((3+4))"}}]},
        {"name": "after", "match": "elsewhere-7", "text": "Answered from the terminal."},
    ]) as server:
        yield server


def test_an_approval_answered_from_attach_cancels_the_editors_permission_request(env: dict[str, Any]) -> None:
    workspace: Path = env["workspace"]
    with RawEditor(workspace) as editor:
        editor.initialize()
        editor.send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
        sid = editor.answer_of(2)["result"]["sessionId"]
        editor.send({"id": 3, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "answer elsewhere"}]}})
        asked = editor.expect(lambda m: m.get("method") == "session/request_permission")

        with grpc.insecure_channel(f"unix:{env['rdir'] / 'loop.sock'}") as channel:
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            other = Conversation(stub, loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=sid, after_seq=0)))
            terminal = threading.Thread(target=other.drain, args=(reply_to_approvals(loop_pb2.APPROVAL_DECISION_ALLOW_ONCE),))
            terminal.start()
            cancelled = editor.expect(lambda m: m.get("method") == "$/cancel_request")
            assert cancelled["params"] == {"requestId": asked["id"]}
            # The editor answers anyway, too late: ignored (the terminal's allow stands).
            editor.send({"id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}})
            answer = editor.answer_of(3)
            terminal.join(timeout=60)
        assert answer["result"] == {"stopReason": "end_turn"}
        assert any(e.WhichOneof("event") == "tool_finished" and e.tool_finished.result.ok
                   and "elsewhere-7" in e.tool_finished.result.output for e in other.events)
        resolved = [e.approval_resolved for e in other.events if e.WhichOneof("event") == "approval_resolved"]
        assert [r.decision for r in resolved] == [loop_pb2.APPROVAL_DECISION_ALLOW_ONCE]
