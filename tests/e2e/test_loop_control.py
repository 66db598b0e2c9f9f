"""Approvals, interrupts, queued input and re-attach over the real turn stream."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    kinds,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]


def reply_to_approvals(decision: loop_pb2.ApprovalDecision.ValueType) -> Callable[[loop_pb2.TurnEvent, Conversation], None]:
    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=decision)))
    return on_event


def results(events: list[loop_pb2.TurnEvent]) -> list[loop_pb2.ToolFinished]:
    return [e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished"]


def test_an_approval_request_carries_the_exact_command_and_deny_reaches_the_model(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "clean", "tool_calls": [{"name": "bash", "arguments": {"command": "touch made-by-bash"}}]},
        {"match": "denied_by_user", "text": "OK, I will not touch anything."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    events = stack.start(sid, "clean up").drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_DENY))
    asked = [e.approval_requested for e in events if e.WhichOneof("event") == "approval_requested"]
    assert len(asked) == 1 and asked[0].preview == "touch made-by-bash" and asked[0].tool == "bash"
    assert asked[0].request_id.startswith("t1-")
    assert status_name(finished(events)) == "completed"
    assert results(events)[0].result.error.code == "denied_by_user"
    assert not (workspace / "made-by-bash").exists()


def test_allow_always_is_remembered_for_the_rest_of_the_session(make_stack: Callable[..., LoopStack],
                                                                  workspace: Path) -> None:
    stack = make_stack([
        {"match": "one", "tool_calls": [{"name": "write", "arguments": {"path": "a.txt", "content": "A\n"}}]},
        {"match": "a.txt", "text": "Wrote a."},
        {"match": "two", "tool_calls": [{"name": "write", "arguments": {"path": "b.txt", "content": "B\n"}}]},
        {"match": "b.txt", "text": "Wrote b."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    first = stack.start(sid, "one").drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS))
    asked = [e.approval_requested for e in first if e.WhichOneof("event") == "approval_requested"]
    assert "+A" in asked[0].preview and "b/a.txt" in asked[0].preview  # a unified diff preview
    second = stack.start(sid, "two").drain()
    assert "approval_requested" not in kinds(second)
    assert (workspace / "b.txt").read_text() == "B\n"


def test_stop_at_an_approval_ends_the_turn_with_approval_stop(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "danger", "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}},
                                           {"name": "bash", "arguments": {"command": "echo again"}}]},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    events = stack.start(sid, "danger zone").drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_STOP))
    end = finished(events)
    assert status_name(end) == "approval_stop"
    codes = [r.result.error.code for r in results(events)]
    assert codes == ["stopped_by_user", "cancelled"]
    messages = stack.runtime.sessions[sid].session.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]


def test_a_malformed_or_unknown_approval_answer_counts_as_deny(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "try", "tool_calls": [{"name": "bash", "arguments": {"command": "echo x"}}]},
        {"match": "denied_by_user", "text": "Denied, fine."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id

    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            rid = event.approval_requested.request_id
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(request_id="t9-a99", decision=loop_pb2.APPROVAL_DECISION_ALLOW_ONCE)))
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(request_id=rid)))  # no decision

    events = stack.start(sid, "try it").drain(on_event)
    resolved = [e.approval_resolved for e in events if e.WhichOneof("event") == "approval_resolved"]
    assert resolved[0].source == "malformed" and resolved[0].decision == loop_pb2.APPROVAL_DECISION_DENY
    assert status_name(finished(events)) == "completed"


def test_without_auto_approve_an_unanswered_approval_is_cleared_when_the_turn_ends(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "wait", "tool_calls": [{"name": "bash", "arguments": {"command": "echo x"}}]},
    ], with_tools=True, turn_timeout_seconds=2)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    events = stack.start(sid, "wait for me").drain()
    resolved = [e.approval_resolved for e in events if e.WhichOneof("event") == "approval_resolved"]
    assert resolved and resolved[0].decision == loop_pb2.APPROVAL_DECISION_DENY
    assert resolved[0].source == "turn_ended"
    end = finished(events)
    assert status_name(end) == "timeout" and list(end.cleared_requests) == [resolved[0].request_id]


def test_interrupting_the_batch_cancels_the_running_command_and_the_model_continues(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "sleep", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"match": "cancelled_by_user", "text": "You stopped the sleep; moving on."},
    ], with_tools=True)
    sid = stack.open().session_id

    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "tool_started":
            threading.Timer(0.5, conv.send, [loop_pb2.ClientMessage(
                interrupt=loop_pb2.Interrupt(scope=loop_pb2.INTERRUPT_SCOPE_BATCH))]).start()

    events = stack.start(sid, "sleep a while").drain(on_event)
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "You stopped the sleep; moving on."
    result = results(events)[0].result
    assert result.error.code == "cancelled_by_user" and result.duration_ms < 30_000


def test_interrupting_the_turn_stops_it_and_keeps_the_partial_text(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "talk", "text": "I am saying something long", "chunk_chars": 6,
         "fault": {"kind": "stall", "after_chunks": 2}},
    ])
    sid = stack.open().session_id

    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "text_delta" and event.text_delta.text:
            conv.send(loop_pb2.ClientMessage(interrupt=loop_pb2.Interrupt(scope=loop_pb2.INTERRUPT_SCOPE_TURN)))

    events = stack.start(sid, "talk to me").drain(on_event)
    end = finished(events)
    assert status_name(end) == "interrupted"
    assert end.text and "I am saying something long".startswith(end.text)
    assert stack.runtime.sessions[sid].session.messages[-1] == {**stack.runtime.sessions[sid].session.messages[-1],
                                                          "role": "assistant", "content": end.text}


def test_input_sent_during_a_turn_is_queued_and_runs_next_in_order(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "first", "text": "one", "delay_ms": 500},
        {"match": "second", "text": "two"},
        {"match": "third", "text": "three"},
    ])
    sid = stack.open().session_id

    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "turn_started" and event.turn_started.input == "first":
            conv.send(loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input="second")))
            conv.send(loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input="third")))

    events = stack.start(sid, "first").drain(on_event)
    ends = [e.turn_finished.text for e in events if e.WhichOneof("event") == "turn_finished"]
    assert ends == ["one", "two", "three"]
    queued = [e.input_queued for e in events if e.WhichOneof("event") == "input_queued"]
    assert [q.input for q in queued] == ["second", "third"] and [q.position for q in queued] == [1, 2]


def test_a_client_that_reattaches_gets_every_later_event_exactly_once(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "long", "text": "abcdefghijklmnopqrstuvwxyz" * 4, "chunk_chars": 4, "chunk_delay_ms": 20,
         "tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "x"}]}}]},
        {"match": "[ ] 1.", "text": "finished now", "chunk_chars": 2, "chunk_delay_ms": 10},
    ])
    sid = stack.open().session_id
    conv = stack.start(sid, "long story")
    seen: list[loop_pb2.TurnEvent] = []
    for event in conv:
        seen.append(event)
        if len(seen) == 5:
            conv.cancel()
            break
    last = seen[-1].seq
    rest = stack.attach(sid, last).drain()
    seqs = [e.seq for e in seen] + [e.seq for e in rest]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap, no duplicate
    assert status_name(finished(rest)) == "completed"
    text = "".join(e.text_delta.text for e in [*seen, *rest] if e.WhichOneof("event") == "text_delta")
    assert text == "abcdefghijklmnopqrstuvwxyz" * 4 + "finished now"


def test_auto_approve_allows_warn_but_a_hard_denied_command_is_still_refused(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "wipe", "tool_calls": [{"name": "bash", "arguments": {"command": "sudo rm -rf /"}},
                                         {"name": "bash", "arguments": {"command": "echo fine > ok.txt"}}]},
        {"match": "fine", "text": "Refused the dangerous one."},
    ], with_tools=True)
    sid = stack.open(auto_approve=True).session_id
    events = stack.start(sid, "wipe the disk").drain()
    assert "approval_requested" not in kinds(events)
    codes = [r.result.error.code for r in results(events)]
    assert codes == ["permission_denied", ""]
    assert (workspace / "ok.txt").read_text() == "fine\n"


def test_a_second_client_attached_to_the_session_can_answer_the_approval_and_both_see_the_same_events(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "make", "tool_calls": [{"name": "write", "arguments": {"path": "b.txt", "content": "B\n"}}]},
        {"match": "b.txt", "text": "Made it."},
    ], with_tools=True)
    sid = stack.open(auto_approve=False, interactive=True).session_id
    first = stack.start(sid, "make a file")
    first_events: list[loop_pb2.TurnEvent] = []
    for event in first:
        first_events.append(event)
        if event.WhichOneof("event") == "approval_requested":
            break
    second = stack.attach(sid, 0)
    second_events = second.drain(reply_to_approvals(loop_pb2.APPROVAL_DECISION_ALLOW_ONCE))
    first_events += list(first)
    assert [e.seq for e in first_events] == [e.seq for e in second_events]
    assert status_name(finished(first_events)) == "completed"
    resolved = [e.approval_resolved for e in first_events if e.WhichOneof("event") == "approval_resolved"]
    assert resolved[0].decision == loop_pb2.APPROVAL_DECISION_ALLOW_ONCE and resolved[0].source == "user"
    assert (workspace / "b.txt").read_text() == "B\n"
