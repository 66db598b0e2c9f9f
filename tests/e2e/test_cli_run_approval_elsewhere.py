"""``ai-coding run`` waiting at its approval prompt notices an answer another client gave and goes on
(real CLI in a pseudo-terminal, supervisor and services; a second client attached over gRPC)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pexpect
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import cli, env
from tests.e2e.test_loop_control import reply_to_approvals
from tests.service.loop.harness import Conversation, finished, status_name

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "ask", "tool_calls": [{"name": "bash", "arguments": {"command": "echo sandbox-says-$((6*7))"}}]},
        {"name": "report", "match": "sandbox-says-42", "text": "The command printed 42."},
    ]) as server:
        yield server


def test_run_at_its_prompt_continues_when_an_attached_client_answers(env: dict[str, Any]) -> None:
    assert cli("up").returncode == 0
    workspace: Path = env["workspace"]
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "run", "-w", str(workspace),
                                           "what does the sandbox say?"],
                          env=dict(os.environ), encoding="utf-8", timeout=90, dimensions=(40, 160))
    try:
        child.expect_exact("allow bash? [y/a/n/s]")
        with grpc.insecure_channel(f"unix:{env['rdir'] / 'loop.sock'}") as channel:
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            [session] = stub.ListSessions(loop_pb2.ListSessionsRequest(workspace=str(workspace)), timeout=10).sessions
            other = Conversation(stub, loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(
                session_id=session.session_id, after_seq=0)))
            events = other.drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_ALLOW_ONCE))
        assert status_name(finished(events)) == "completed"
        child.expect_exact("(answered elsewhere)")
        child.expect_exact("The command printed 42.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
