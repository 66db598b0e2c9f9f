"""Every class of failure inside a child run ends the child with its typed packet, frees its slot, and
the parent's turn goes on, through the real loop and tools services (the fake model answers parent and
child apart). Covered elsewhere: the child's timeout and iteration cap, and cancelling the parent's
batch (tests/e2e/test_subagents.py); a worktree that cannot be made (tests/faults/test_disk_full.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ai_coding.v1 import loop_pb2

from services.loop.subagents.feature import SubagentsFeature
from tests.e2e.test_subagents import PARENT, child, parent_calls, script, subagent_results
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

TASK = "inspect the build"


def _parent_goes_on(stack: LoopStack, sid: str, events: list[loop_pb2.TurnEvent]) -> dict[str, Any]:
    """The parent completed with its own answer after the child; no run holds a slot. The packet."""
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "parent done", end
    feature = stack.runtime.sessions[sid].feature(SubagentsFeature)
    assert feature is not None and not feature.manager.table.running()
    packets = subagent_results(events)
    assert len(packets) == 1, packets
    return packets[0]


def _child_results(events: list[loop_pb2.TurnEvent]) -> list[loop_pb2.ToolFinished]:
    return [e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished" and e.HasField("scope")]


def test_a_model_error_in_the_child_ends_it_failed_naming_the_error(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"fault": {"kind": "auth_error", "message": "key revoked"}})))
    sid, events = stack.turn(f"{PARENT}: model error")
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["error"]) == ("failed", "child_error"), packet
    assert "401" in packet["exit_reason"] or "auth" in packet["exit_reason"].lower(), packet


def test_garbage_tool_call_json_from_the_childs_model_is_an_error_result_and_the_child_goes_on(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"tool_calls": [{"name": "bash", "arguments_raw": '{"command": "ls'}]},
                                    {"match_anywhere": "invalid_arguments", "text": "child recovered"})),
                       with_tools=True)
    sid, events = stack.turn(f"{PARENT}: garbage arguments")
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["final_text"]) == ("completed", "child recovered"), packet
    assert [r.result.error.code for r in _child_results(events)] == ["invalid_arguments"]


def test_a_tool_whose_process_crashes_under_the_child_is_reported_and_the_child_goes_on(
        make_stack: Callable[..., LoopStack]) -> None:
    """Children have no MCP tools: the tool that crashes is a command killed by a signal mid-output."""
    crash = {"name": "bash", "arguments": {"command": "echo half; kill -SEGV $$; echo never"}}
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"tool_calls": [crash]}, {"match_anywhere": "half", "text": "child recovered"})),
                       with_tools=True)
    sid, events = stack.turn(f"{PARENT}: crashing tool")
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["final_text"]) == ("completed", "child recovered"), packet
    [crashed] = [r.result for r in _child_results(events)]
    assert "(exit code 139)" in crashed.output and "never" not in crashed.output, crashed  # SIGSEGV: 128 + 11


def test_the_tools_service_dying_under_the_child_is_named_and_the_child_and_parent_go_on(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
                                    {"match_anywhere": "tool_service_unavailable", "text": "child recovered"})),
                       with_tools=True)
    sid = stack.open().session_id

    def kill_tools(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "tool_started" and event.HasField("scope"):
            threading.Timer(0.3, stack.services.stop_server, [stack.tools, 0.0]).start()

    events = stack.start(sid, f"{PARENT}: tools die").drain(kill_tools)
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["final_text"]) == ("completed", "child recovered"), packet
    assert [r.result.error.code for r in _child_results(events)] == ["tool_service_unavailable"]


def test_a_child_that_spends_its_token_budget_ends_max_iterations_and_truncated(
        make_stack: Callable[..., LoopStack]) -> None:
    todo = {"name": "todo_write", "arguments": {"goal": "loop"}}
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"tool_calls": [todo], "usage": {"prompt_tokens": 400,
                                                                           "completion_tokens": 200},
                                           "repeat": "forever"})),
                       subagent_token_budget=1000)
    sid, events = stack.turn(f"{PARENT}: budget")
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["error"], packet["truncated"]) == (
        "max_iterations", "child_max_iterations", True), packet
    assert 1 <= packet["iterations"] < 10 and packet["usage"]["total_tokens"] >= 1000, packet


def test_a_foreground_child_stopped_with_tasks_stop_ends_cancelled_and_the_parent_goes_on(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(script(parent_calls({"task": TASK}),
                              child(TASK, {"text": "thinking very slowly", "chunk_delay_ms": 300, "chunk_chars": 1})))
    sid = stack.open().session_id
    stopped: list[str] = []

    def stop_child(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "subagent_started" and not stopped:
            run_id = event.subagent_started.run_id

            def stop() -> None:
                reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="tasks",
                                                                         args=f"stop {run_id}"), timeout=10)
                stopped.append(reply.text)

            threading.Timer(0.5, stop).start()

    events = stack.start(sid, f"{PARENT}: stop it").drain(stop_child)
    assert stopped and stopped[0].startswith("stopping run"), stopped
    packet = _parent_goes_on(stack, sid, events)
    assert (packet["status"], packet["error"], packet["truncated"]) == ("cancelled", "child_error", True), packet
