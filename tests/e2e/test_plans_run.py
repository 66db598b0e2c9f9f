"""/plan through the real loop and tools services: planning turn, step sessions, receipts, the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import loop_pb2

from services.loop.compaction.feature import DIGESTS
from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)
from tests.support.plan_scripts import THREE_ITEMS, todo

__all__ = ["fake", "make_stack", "workspace"]


def plan(stack: LoopStack, sid: str, topic: str) -> list[loop_pb2.TurnEvent]:
    return Conversation(stack.stub, loop_pb2.ClientMessage(plan=loop_pb2.StartPlan(session_id=sid, topic=topic)),
                        timeout=120).drain()


def of(events: list[loop_pb2.TurnEvent], kind: str) -> list[Any]:
    return [getattr(e, kind) for e in events if e.WhichOneof("event") == kind]


def test_a_three_item_plan_repairs_item_two_stalls_item_three_and_grades_every_item(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack(THREE_ITEMS, with_tools=True)
    sid = stack.open().session_id
    events = plan(stack, sid, "ship the files")
    assert stack.fake.errors == []
    assert len(of(events, "turn_started")) == 1 and len(of(events, "turn_finished")) == 1
    end = finished(events)
    assert status_name(end) == "plan_incomplete" and end.reason == "plan incomplete: 3 (stalled)"
    assert [(s.index, s.total, s.item_id) for s in of(events, "plan_step_started")] == [(1, 3, "1"), (2, 3, "2"),
                                                                                          (3, 3, "3")]
    receipts = of(events, "plan_step_receipt")
    assert [(r.item_id, r.outcome, r.grade, r.attempts) for r in receipts] == [
        ("1", "done", "on-claim", 1), ("2", "done", "verified", 2), ("3", "stalled", "n/a", 1)]
    assert receipts[1].verify == "grep -q ok b.txt" and all(r.attested for r in receipts)
    checked = of(events, "acceptance_checked")
    assert [(c.command, c.passed) for c in checked] == [("grep -q ok b.txt", False), ("grep -q ok b.txt", True)]
    report = of(events, "plan_report")[0]
    assert (report.total, report.done, list(report.unproven)) == (3, 2, ["1", "3"])
    assert "without proof: 1, 3" in report.text
    assert (workspace / "b.txt").read_text() == "ok\n"
    # The task list says what happened; the parent's history holds the request and the report only.
    rt = stack.runtime.sessions[sid]
    assert [i.status for i in rt.session.task_state.items] == ["completed", "completed", "in_progress"]
    shown = of(events, "task_list_updated")[-1]  # the runner's own marks reach the clients too
    assert [i.status for i in shown.items] == ["completed", "completed", "in_progress"]
    assert [m["role"] for m in rt.session.messages] == ["user", "assistant"]
    # Receipts are saved with the session and come back with it; step sessions are not sessions.
    got = stack.stub.GetSession(loop_pb2.GetSessionRequest(workspace=str(workspace), session_id=sid), timeout=30)
    saved = json.loads(got.plan_json)
    assert saved["goal"] == "ship the files"
    assert [(r["item_id"], r["grade"]) for r in saved["receipts"]] == [("1", "on-claim"), ("2", "verified"),
                                                                        ("3", "n/a")]
    listed = stack.stub.ListSessions(loop_pb2.ListSessionsRequest(workspace=str(workspace)), timeout=30)
    assert [s.session_id for s in listed.sessions] == [sid]


def test_each_step_request_carries_the_seed_not_the_history_flat_across_six_items(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    items = [{"content": f"write file{n}.txt with some content that takes room in every request"} for n in range(1, 7)]
    script: list[dict[str, Any]] = [
        {"match": "[plan] Topic: six files", "tool_calls": [todo(goal="six files", add=items)]},
        {"match": "[ ] 6. write file6.txt", "text": "Planned."},
    ]
    for n in range(1, 7):
        script += [
            {"match": f"[plan step {n}/6]", "tool_calls": [
                {"name": "bash", "arguments": {"command": f"seq 1 400 > file{n}.txt && cat file{n}.txt"}},
                todo(update=[{"id": str(n), "status": "completed"}])]},
            {"match": f"[x] {n}. write file{n}.txt", "text": f"Wrote file{n}.txt. " + "details " * 200},
        ]
    stack = make_stack(script, with_tools=True)
    sid = stack.open().session_id
    events = plan(stack, sid, "six files")
    assert stack.fake.errors == []
    assert status_name(finished(events)) == "completed"
    assert [r.grade for r in of(events, "plan_step_receipt")] == ["on-claim"] * 6
    firsts = [r for r in stack.fake.chat_requests if "[plan step " in r.last_message]  # each step's first request
    assert len(firsts) == 6
    sizes = [len(json.dumps(r.body["messages"])) for r in firsts]
    for request in firsts:  # the system message and the seed: nothing of earlier steps
        assert len(request.body["messages"]) == 2
        assert "Wrote file" not in json.dumps(request.body["messages"])
    # Each step's tool output (400 lines) and answer would add ~3 kB per step if history were re-sent.
    assert max(sizes) - min(sizes) < 600, sizes


@pytest.mark.parametrize("topic", ["summarize /etc/passwd", "compare this with ../other", "read ~/.ssh/config"])
def test_a_topic_naming_paths_outside_the_workspace_is_refused_with_zero_model_calls(
        make_stack: Callable[..., LoopStack], topic: str) -> None:
    stack = make_stack([{"match": "", "text": "should never be asked", "repeat": "forever"}])
    sid = stack.open().session_id
    with pytest.raises(grpc.RpcError) as raised:
        plan(stack, sid, topic)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "outside the workspace" in str(raised.value.details())
    assert stack.fake.chat_requests == []
    assert stack.runtime.sessions[sid].session.turns == 0


def test_an_item_naming_paths_outside_the_workspace_stops_the_plan_before_any_step(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "[plan] Topic: tidy up", "tool_calls": [todo(goal="tidy up", add=[
            {"content": "clean the build dir"}, {"content": "also delete /etc/hosts"}])]},
        {"match": "/etc/hosts", "text": "Planned."},
    ], with_tools=True)
    sid = stack.open().session_id
    events = plan(stack, sid, "tidy up")
    end = finished(events)
    assert status_name(end) == "plan_incomplete"
    assert end.reason == "plan not run: item 2 names paths outside the workspace: /etc/hosts"
    assert len(stack.fake.chat_requests) == 2 and of(events, "plan_step_started") == []
    assert [(r.item_id, r.outcome, r.grade) for r in of(events, "plan_step_receipt")] == [
        ("1", "open", "n/a"), ("2", "open", "n/a")]


def test_items_done_during_planning_get_unattested_fiat_receipts_at_zero_cost(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "[plan] Topic: quick", "tool_calls": [todo(goal="quick", add=[{"content": "say hi"}])]},
        {"match": "[ ] 1. say hi", "tool_calls": [todo(update=[{"id": "1", "status": "completed"}])]},
        {"match": "[x] 1. say hi", "text": "Already done."},
    ])
    sid = stack.open().session_id
    events = plan(stack, sid, "quick")
    receipt = of(events, "plan_step_receipt")[0]
    assert (receipt.outcome, receipt.grade, receipt.attested, receipt.tokens) == ("done", "fiat", False, 0)
    assert status_name(finished(events)) == "completed"
    assert list(of(events, "plan_report")[0].unproven) == ["1"]


def test_a_checkpoint_note_left_in_a_step_is_its_receipt_line_and_the_run_leaves_one_digest(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "[plan] Topic: greet", "tool_calls": [todo(goal="greet", add=[{"content": "say hello"}])]},
        {"match": "[ ] 1. say hello", "text": "Planned."},
        {"match": "[plan step 1/1]", "tool_calls": [
            {"name": "checkpoint_write", "arguments": {"note": "said hello to the user"}},
            todo(update=[{"id": "1", "status": "completed"}])]},
        {"match": "[x] 1. say hello", "text": "Hello!"},
    ])
    sid = stack.open().session_id
    events = plan(stack, sid, "greet")
    assert stack.fake.errors == []
    receipt = of(events, "plan_step_receipt")[0]
    assert (receipt.grade, receipt.note) == ("on-claim", "said hello to the user")
    digests = DIGESTS.read(stack.runtime.sessions[sid].session)
    assert len(digests) == 1 and digests[0].startswith("turn 1 [completed]: /plan greet ->")


TWO_ITEMS = [
    {"match": "[plan] Topic: two things", "tool_calls": [todo(goal="two things", add=[
        {"content": "first thing"}, {"content": "second thing"}])]},
    {"match": "[ ] 2. second thing", "text": "Planned."},
]


def test_plan_max_step_turns_leaves_the_items_it_did_not_reach_open(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        *TWO_ITEMS,
        {"match": "[plan step 1/2]", "tool_calls": [todo(update=[{"id": "1", "status": "completed"}])]},
        {"match": "[x] 1. first thing", "text": "Did the first."},
    ], plan_max_step_turns=1)
    sid = stack.open().session_id
    events = plan(stack, sid, "two things")
    assert stack.fake.errors == []
    receipts = of(events, "plan_step_receipt")
    assert [(r.item_id, r.outcome, r.note) for r in receipts] == [
        ("1", "done", ""), ("2", "open", "plan_max_step_turns (1) reached")]
    end = finished(events)
    assert status_name(end) == "plan_incomplete" and end.reason == "plan incomplete: 2 (open)"


def test_an_item_whose_step_outruns_its_wall_clock_stalls_and_the_next_item_still_runs(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        *TWO_ITEMS,
        {"match": "[plan step 1/2]", "text": "thinking very slowly", "delay_ms": 8000},
        {"match": "[plan step 2/2]", "tool_calls": [todo(update=[{"id": "2", "status": "completed"}])]},
        {"match": "[x] 2. second thing", "text": "Did the second."},
    ], plan_item_wall_seconds=2)
    sid = stack.open().session_id
    events = plan(stack, sid, "two things")
    receipts = of(events, "plan_step_receipt")
    assert [(r.item_id, r.outcome) for r in receipts] == [("1", "stalled"), ("2", "done")]
    assert "timeout" in receipts[0].note
    assert status_name(finished(events)) == "plan_incomplete"


def test_an_interrupt_during_a_step_ends_the_run_interrupted_and_leaves_the_rest_open(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        *TWO_ITEMS,
        {"match": "[plan step 1/2]", "text": "a long answer " * 50, "chunk_chars": 10, "chunk_delay_ms": 200},
    ])
    sid = stack.open().session_id

    def interrupt_at_first_text(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "text_delta" and "long" in event.text_delta.text:
            conv.send(loop_pb2.ClientMessage(interrupt=loop_pb2.Interrupt(scope=loop_pb2.INTERRUPT_SCOPE_TURN)))

    conv = Conversation(stack.stub, loop_pb2.ClientMessage(plan=loop_pb2.StartPlan(session_id=sid, topic="two things")),
                        timeout=120)
    events = conv.drain(interrupt_at_first_text)
    end = finished(events)
    assert status_name(end) == "interrupted" and len(of(events, "turn_finished")) == 1, end.reason
    assert [(r.item_id, r.outcome) for r in of(events, "plan_step_receipt")] == [("1", "open"), ("2", "open")]
    assert stack.runtime.sessions[sid].idle


def test_a_step_gets_one_continuation_that_names_only_its_own_item(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        TWO_ITEMS[0],  # with one step per round the planning turn ends at its todo_write (it gets no continuation)
        {"match": "[plan step 1/2]", "tool_calls": [{"name": "tool_search", "arguments": {"query": "jobs"}}]},
        {"match": ["[continue]", "1 todo item(s) are still open: first thing."],
         "tool_calls": [todo(update=[{"id": "1", "status": "completed"}])]},
        {"match": "[plan step 2/2]", "tool_calls": [{"name": "tool_search", "arguments": {"query": "web"}}]},
        {"match": "[continue]", "tool_calls": [{"name": "tool_search", "arguments": {"query": "fetch"}}]},
    ], max_tool_iterations=1)
    sid = stack.open().session_id
    events = plan(stack, sid, "two things")
    assert stack.fake.errors == []
    receipts = of(events, "plan_step_receipt")
    assert [(r.item_id, r.outcome) for r in receipts] == [("1", "done"), ("2", "stalled")]
    assert "max_iterations" in receipts[1].note  # its one continuation was used; the second round ran out
    nudges = [r.last_message.split("\n\n<", 1)[0] for r in stack.fake.chat_requests
              if r.last_message.startswith("[continue]")]  # the nudge itself, before the request's tail blocks
    assert len(nudges) == 2
    assert "still open: first thing." in nudges[0] and "still open: second thing." in nudges[1]
