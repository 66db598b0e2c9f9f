"""The acceptance gate on whole turns: real loop and tools services (bwrap), the fake model as the only stand-in."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

from ai_coding.v1 import loop_pb2

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


def accept(stack: LoopStack, sid: str, args: str) -> loop_pb2.RunCommandResponse:
    reply: loop_pb2.RunCommandResponse = stack.stub.RunCommand(
        loop_pb2.RunCommandRequest(session_id=sid, command="accept", args=args), timeout=30)
    return reply


def verdicts(events: list[loop_pb2.TurnEvent]) -> list[loop_pb2.AcceptanceChecked]:
    return [e.acceptance_checked for e in events if e.WhichOneof("event") == "acceptance_checked"]


def test_the_gate_fails_an_early_stop_nudges_with_the_output_and_passes_after_the_fix(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "make the marker", "text": "Done, the marker is there."},
        {"match": ["[acceptance-gate]", "test -f marker.txt", "exited 1"],
         "tool_calls": [{"name": "bash", "arguments": {"command": "echo ok > marker.txt"}}]},
        {"match": "(no output)", "text": "Now it really is there."},
    ], with_tools=True)
    sid = stack.open().session_id
    added = accept(stack, sid, '"the marker exists" -- test -f marker.txt')
    assert "added a1" in added.text and json.loads(added.data_json)["items"][0]["command"] == "test -f marker.txt"
    events = stack.start(sid, "make the marker file").drain()
    end = finished(events)
    assert status_name(end) == "completed" and end.reason == "acceptance verified"
    assert end.text == "Now it really is there."
    checked = verdicts(events)
    assert [(v.item_id, v.passed, v.exit_code) for v in checked] == [("a1", False, 1), ("a1", True, 0)]
    nudge = stack.fake.chat_requests[1].body["messages"][-1]["content"]
    assert nudge.startswith("[acceptance-gate]") and "`test -f marker.txt` exited 1" in nudge
    assert (workspace / "marker.txt").read_text() == "ok\n"
    assert stack.fake.errors == []
    ledger = [list(e.ledger_updated.open) for e in events if e.WhichOneof("event") == "ledger_updated"]
    assert ledger == [["verify failed: `test -f marker.txt` (a1)"], []]  # opened by the failure, closed by the pass
    # Each verdict is in the turn's trace, and /accept shows the last one.
    trace = (workspace / ".ai-coding" / "traces" / sid / "turn-1.jsonl").read_text()
    assert trace.count('"kind": "acceptance_checked"') == 2
    assert accept(stack, sid, "").text.startswith("✓ a1 [user] the marker exists")


def test_two_failed_repairs_end_the_turn_acceptance_failed_naming_the_command(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "make the marker", "text": "Done."},
        {"match": "[acceptance-gate]", "tool_calls": [{"name": "bash", "arguments": {"command": "echo wrong > other.txt"}}]},
        {"match": "(no output)", "text": "Fixed."},
        {"match": "[acceptance-gate]", "text": "It is fine, trust me."},
    ], with_tools=True)
    sid = stack.open().session_id
    accept(stack, sid, '"the marker exists" -- test -f marker.txt')
    events = stack.start(sid, "make the marker file").drain()
    end = finished(events)
    assert status_name(end) == "acceptance_failed"
    assert end.reason == "acceptance failed: `test -f marker.txt` exited 1"
    assert [v.passed for v in verdicts(events)] == [False, False, False]
    nudges = [m["content"] for r in stack.fake.chat_requests for m in r.body["messages"][-1:]
              if str(m.get("content", "")).startswith("[acceptance-gate]")]
    assert len(nudges) == 2  # the gate's own budget; the third failure ends the turn
    assert stack.fake.errors == []
    ledger = [list(e.ledger_updated.open) for e in events if e.WhichOneof("event") == "ledger_updated"]
    assert ledger == [["verify failed: `test -f marker.txt` (a1)"]]  # once: the open set changed once


def test_a_proof_that_writes_outside_the_workspace_fails_in_the_sandbox(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    # CI runs as root: outside the sandbox both writes would land on the host.
    target = Path("/etc") / f"ai-coding-escape-{uuid.uuid4().hex}"
    stack = make_stack([{"match": "", "text": "Finished.", "repeat": 3}], with_tools=True)
    sid = stack.open().session_id
    accept(stack, sid, f'"escaped" -- echo pwned > ../escaped.txt; echo pwned > {target}')
    events = stack.start(sid, "do nothing").drain()
    end = finished(events)
    assert status_name(end) == "acceptance_failed" and "exited 1" in end.reason
    checked = verdicts(events)
    assert len(checked) == 3 and not any(v.passed for v in checked) and checked[0].exit_code == 1
    assert "Read-only file system" in checked[0].output_tail
    assert not target.exists() and not (workspace.parent / "escaped.txt").exists()


def test_a_budget_finish_whose_proofs_pass_on_the_recheck_is_completed(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "make the marker", "tool_calls": [{"name": "bash", "arguments": {"command": "echo ok > marker.txt"}}],
         "usage": {"prompt_tokens": 5000, "completion_tokens": 10}},
    ], with_tools=True, turn_token_budget=1000)
    sid = stack.open().session_id
    accept(stack, sid, '"the marker exists" -- test -f marker.txt')
    events = stack.start(sid, "make the marker file").drain()
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.reason == "acceptance verified (token budget used up)"
    assert [v.passed for v in verdicts(events)] == [True]


def test_a_budget_finish_whose_proof_still_fails_stays_budget(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "make the marker", "tool_calls": [{"name": "bash", "arguments": {"command": "echo no"}}],
         "usage": {"prompt_tokens": 5000, "completion_tokens": 10}},
    ], with_tools=True, turn_token_budget=1000)
    sid = stack.open().session_id
    accept(stack, sid, '"the marker exists" -- test -f marker.txt')
    events = stack.start(sid, "make the marker file").drain()
    assert status_name(finished(events)) == "budget"
    assert [v.passed for v in verdicts(events)] == [False]


def test_a_model_proposal_needs_approval_under_confirm_mode_and_then_gates_the_turn(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "write hello", "tool_calls": [{"name": "acceptance_propose", "arguments": {
            "statement": "hello.txt says hi", "command": "grep -q hi hello.txt"}}]},
        {"match": "acceptance item a1 added", "tool_calls": [{"name": "bash", "arguments": {
            "command": "echo hi > hello.txt"}}]},
        {"match": "(no output)", "text": "Wrote it."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    asked: list[loop_pb2.ApprovalRequested] = []

    def approve(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            asked.append(event.approval_requested)
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=loop_pb2.APPROVAL_DECISION_ALLOW_ONCE)))

    events = stack.start(sid, "write hello").drain(approve)
    assert [a.tool for a in asked] == ["acceptance_propose", "bash"]
    assert "grep -q hi hello.txt" in asked[0].arguments_json
    end = finished(events)
    assert status_name(end) == "completed" and end.reason == "acceptance verified"
    assert [(v.item_id, v.passed) for v in verdicts(events)] == [("a1", True)]
    items = json.loads(accept(stack, sid, "").data_json)["items"]
    assert items[0]["source"] == "model" and items[0]["lastPassed"] is True


def test_a_turn_without_acceptance_items_completes_without_a_gate(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "hi", "text": "Hello."}])
    sid, events = stack.turn("hi")
    end = finished(events)
    assert status_name(end) == "completed" and end.reason == "" and verdicts(events) == []
    assert stack.runtime.sessions[sid].session.meta().get("acceptance") is None  # saved only when set
