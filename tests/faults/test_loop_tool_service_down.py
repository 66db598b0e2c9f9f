"""The tools service dies mid-call or restarts: the model gets tool_service_unavailable, or the session is reopened."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ai_coding.v1 import loop_pb2

from services.kernel.config import Config
from services.tools.main import build as build_tools
from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]


def test_a_tools_service_that_dies_mid_call_yields_tool_service_unavailable_and_the_turn_continues(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "build", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"match": "tool_service_unavailable", "text": "The tool service went away; try again later."},
    ], with_tools=True)
    sid = stack.open().session_id

    def kill_tools(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "tool_started":
            threading.Timer(0.3, stack.services.stop_server, [stack.tools, 0.0]).start()

    events = stack.start(sid, "build it").drain(kill_tools)
    end = finished(events)
    assert status_name(end) == "completed" and end.text.startswith("The tool service went away")
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.error.code == "tool_service_unavailable" and result.duration_ms < 30_000
    degraded = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    assert degraded and degraded[0].component == "tools"


def test_after_the_tools_service_restarts_an_open_session_is_reopened_and_its_calls_run(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "first", "tool_calls": [{"name": "bash", "arguments": {"command": "echo before"}}]},
        {"match": "before", "text": "ran before the restart"},
        {"match": "second", "tool_calls": [{"name": "bash", "arguments": {"command": "echo after > after.txt"}}]},
        {"match": "(no output)", "text": "ran after the restart"},
    ], with_tools=True)
    sid = stack.open().session_id
    assert status_name(finished(stack.start(sid, "first").drain())) == "completed"
    # A restarted tools service is a new process that has never heard of the session.
    stack.services.stop_server(stack.tools, 0.0)
    stack.tools = stack.services.serve(stack.tools.address, build_tools(Config(data={})))
    events = stack.start(sid, "second").drain()
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "ran after the restart", stack.fake.errors
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok, result.output
    assert (workspace / "after.txt").read_text() == "after\n"
