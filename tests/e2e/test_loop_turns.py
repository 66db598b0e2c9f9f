"""Whole turns through the real loop and tools services with the fake model as the only stand-in."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import (
    LoopStack,
    fake,
    finished,
    kinds,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]


def tool_results(events: list[loop_pb2.TurnEvent]) -> list[Any]:
    return [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]


def test_a_turn_runs_bash_in_the_sandbox_reads_a_file_and_completes(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    stack = make_stack([
        {"match": "count the lines", "tool_calls": [{"name": "bash", "arguments": {"command": "wc -l notes.txt"}}]},
        {"match": "notes.txt", "text": "Reading it.", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"match": "beta", "text": "notes.txt has 2 lines."},
    ], with_tools=True)
    sid, events = stack.turn("count the lines in notes.txt")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "notes.txt has 2 lines."
    results = tool_results(events)
    assert [r.tool for r in results] == ["bash", "read"]
    assert all(r.ok for r in results), [(r.error.code, r.error.message) for r in results]
    assert "2 notes.txt" in results[0].output
    assert end.iterations == 3
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)) and seqs[-1] - seqs[0] == len(seqs) - 1
    # The session on disk has every message, strictly paired.
    reply = stack.stub.GetSession(loop_pb2.GetSessionRequest(workspace=str(workspace), session_id=sid))
    roles = [m["role"] for m in json.loads(reply.messages_json)]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_the_stable_part_of_each_request_is_a_byte_prefix_of_the_next(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always run the tests with pytest -q.\n")
    stack = make_stack([
        {"match": "look around", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
        {"match": "AGENTS.md", "tool_calls": [{"name": "read", "arguments": {"path": "AGENTS.md"}}]},
        {"match": "pytest -q", "text": "Done looking."},
    ], with_tools=True)
    stack.turn("look around")
    requests = [r.body for r in stack.fake.chat_requests]
    assert len(requests) == 3
    assert "pytest -q" in requests[0]["messages"][0]["content"]  # project notes in the system message
    for before, after in itertools.pairwise(requests):
        stable = json.dumps(_without_tail(before["messages"]))[:-1]  # drop the closing bracket
        assert json.dumps(after["messages"]).startswith(stable.rsplit('"}', 1)[0])
        assert before["tools"] == after["tools"]


def _without_tail(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = dict(messages[-1])
    last["content"] = str(last["content"]).split("\n\n<", 1)[0]
    return [*messages[:-1], last]


def test_malformed_tool_json_from_the_model_becomes_an_invalid_arguments_result(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "go", "tool_calls": [{"name": "bash", "arguments_raw": '{"command": "ls'}]},
        {"match": "invalid_arguments", "text": "I will fix my JSON."},
    ], with_tools=True)
    _, events = stack.turn("go")
    assert status_name(finished(events)) == "completed"
    result = tool_results(events)[0]
    assert not result.ok and result.error.code == "invalid_arguments"
    sent_back = stack.fake.chat_requests[1].body["messages"][-2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent_back) == {"_invalid_json": '{"command": "ls'}  # valid JSON for strict providers


def test_max_iterations_ends_the_turn_with_a_handoff_when_the_model_keeps_calling_tools(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "loop", "tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
        {"match": "one", "tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}}]},
    ], with_tools=True, max_tool_iterations=2)
    _, events = stack.turn("loop forever")
    end = finished(events)
    assert status_name(end) == "max_iterations"
    assert end.iterations == 2
    assert "Handoff" in end.handoff and "loop forever" in end.handoff


def test_open_todo_items_earn_a_continue_nudge_before_max_iterations(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "plan", "tool_calls": [{"name": "todo_write", "arguments": {
            "add": [{"content": "write the fix"}, {"content": "run the tests"}]}}]},
        {"match": "write the fix", "tool_calls": [{"name": "tool_search", "arguments": {"query": "jobs"}}]},
        {"match": ["[continue]", "run the tests"], "tool_calls": [{"name": "todo_write", "arguments": {
            "update": [{"id": "1", "status": "completed"}, {"id": "2", "status": "completed"}]}}]},
        {"match": "[x] 2.", "text": "All done."},
    ], max_tool_iterations=2)
    _, events = stack.turn("plan the work")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert "task_list_updated" in kinds(events)
    nudged = [r for r in stack.fake.chat_requests if "[continue]" in json.dumps(r.body["messages"])]
    assert nudged, "the second request should carry the [continue] nudge"


def test_the_token_budget_ends_the_turn_with_status_budget(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "spend", "usage": {"prompt_tokens": 5000, "completion_tokens": 10},
         "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]},
    ], with_tools=True, turn_token_budget=1000)
    _, events = stack.turn("spend tokens")
    end = finished(events)
    assert status_name(end) == "budget"
    assert end.usage.total_tokens >= 1000


def test_the_turn_clock_ends_a_stalled_step_with_timeout_keeping_streamed_text(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "slow", "text": "Partial answer that keeps streaming", "chunk_chars": 8,
         "fault": {"kind": "stall", "after_chunks": 2}},
    ], turn_timeout_seconds=2)
    sid, events = stack.turn("slow please")
    end = finished(events)
    assert status_name(end) == "timeout"
    streamed = "".join(e.text_delta.text for e in events if e.WhichOneof("event") == "text_delta")
    assert streamed and end.text == streamed
    rt = stack.runtime.sessions[sid]
    assert rt.session.messages[-1]["content"] == streamed


def test_a_429_is_retried_and_the_turn_completes(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "hi", "fault": {"kind": "rate_limit", "retry_after": 0.1}},
        {"match": "hi", "text": "Hello."},
    ])
    _, events = stack.turn("hi")
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "Hello."
    assert [r.status for r in stack.fake.chat_requests] == [429, 200]


def test_a_500_storm_ends_in_a_clean_failed_status_with_the_session_intact(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "first", "text": "First answer."},
        {"match": "second", "fault": "server_error", "repeat": "forever"},
    ])
    sid, events = stack.turn("first question")
    assert status_name(finished(events)) == "completed"
    _, events = stack.turn("second question", session_id=sid)
    end = finished(events)
    assert status_name(end) == "failed"
    assert "server_error" in end.reason
    assert end.handoff == ""  # no call ran: the one-line reason is all there is to say
    reopened = stack.open(sid)
    assert reopened.message_count == 3  # user, assistant, user: nothing lost, nothing invented


def test_searches_that_find_nothing_new_climb_the_ladder_and_end_with_a_closing_answer(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "notes.txt").write_text("alpha beta\n")
    greps = [{"tool_calls": [{"name": "grep", "arguments": {"pattern": f"alpha|nothing{i}"}}]} for i in range(5)]
    stack = make_stack([*greps, {"match": "Searching is over", "text": "alpha is on line 1; nothing else found."}],
                       with_tools=True, max_tool_iterations=20, search_streak_threshold=2, search_streak_l2=3,
                       stale_streak_l1=2, stale_streak_l2=3, stale_streak_l3=4, repeated_nonempty_l3=2)
    _, events = stack.turn("where is alpha used?")
    end = finished(events)
    assert status_name(end) == "max_iterations" and end.reason == "search unconverged"
    assert end.text == "alpha is on line 1; nothing else found."
    levels = [e.search_stalled.level for e in events if e.WhichOneof("event") == "search_stalled"]
    assert levels[0] == 1 and levels[-1] == 3
    assert stack.runtime.sessions[finished_session(events)].session.messages[-1]["content"] == end.text
    nudged = json.dumps([r.body["messages"] for r in stack.fake.chat_requests])
    assert "[search-gate]" in nudged and "ruff check ." in nudged  # L2 names the static check to run


def test_with_the_operators_opt_in_the_l2_gate_carries_the_static_checks_own_output(
        make_stack: Callable[..., LoopStack], workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "notes.txt").write_text("alpha beta\n")
    linter = workspace.parent / "linters" / "ruff"  # found on the services' PATH, never in the workspace
    linter.parent.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{linter.parent}:{os.environ['PATH']}")
    linter.write_text('#!/bin/sh\npwd >> "$PWD/linted-in.txt"\necho "notes.py:1:1: E501 line too long ($*)"\nexit 1\n')
    linter.chmod(0o755)
    monkeypatch.setenv("AI_CODING_STATIC_CHECK", "1")
    greps = [{"tool_calls": [{"name": "grep", "arguments": {"pattern": f"alpha|nothing{i}"}}]} for i in range(5)]
    stack = make_stack([*greps, {"match": "Searching is over", "text": "alpha is on line 1."}],
                       with_tools=True, max_tool_iterations=20, search_streak_threshold=2, search_streak_l2=3,
                       stale_streak_l1=2, stale_streak_l2=3, stale_streak_l3=4, repeated_nonempty_l3=2)
    _, events = stack.turn("where is alpha used?")
    assert status_name(finished(events)) == "max_iterations"
    nudges = [m["content"] for r in stack.fake.chat_requests for m in r.body["messages"]
              if m["role"] == "user" and "Static check output" in str(m["content"])]
    assert nudges and "$ ruff check .\nnotes.py:1:1: E501 line too long (check .)\n(exit 1)" in nudges[0]
    # It ran in the workspace, once per turn however long the stall.
    assert (workspace / "linted-in.txt").read_text().splitlines() == [str(workspace)]


def finished_session(events: list[loop_pb2.TurnEvent]) -> str:
    return events[-1].session_id


def test_a_stream_that_breaks_off_is_retried_and_only_the_full_answer_is_kept(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "explain", "text": "A partial answer that will be cut", "chunk_chars": 4,
         "fault": {"kind": "drop", "after_chunks": 3}},
        {"match": "explain", "text": "The complete answer."},
    ])
    sid, events = stack.turn("explain it")
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "The complete answer."
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert any("retrying" in n for n in notices)
    assert stack.runtime.sessions[sid].session.messages[-1]["content"] == "The complete answer."


def test_an_answer_cut_at_the_output_limit_is_continued_once(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "essay", "text": "The first half of the essay", "finish_reason": "length"},
        {"match": "cut off", "text": " and its second half."},
    ])
    _, events = stack.turn("write an essay")
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "The first half of the essay and its second half."
    assert end.iterations == 2


def test_bash_output_streams_to_the_client_as_tool_chunks_before_the_result(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "count", "tool_calls": [{"name": "bash", "arguments": {
            "command": "for i in 1 2 3; do echo line$i; sleep 0.4; done"}}]},
        {"match": "line3", "text": "Counted."},
    ], with_tools=True)
    _, events = stack.turn("count slowly")
    assert status_name(finished(events)) == "completed"
    order = kinds(events)
    chunks = [e.tool_chunk for e in events if e.WhichOneof("event") == "tool_chunk"]
    assert len(chunks) >= 2 and "line1" in chunks[0].text
    assert order.index("tool_chunk") < order.index("tool_finished")


def test_failing_steps_earn_a_strategy_gate_nudge_repeats_are_refused_and_no_progress_ends_the_turn(
        make_stack: Callable[..., LoopStack]) -> None:
    missing = {"name": "read", "arguments": {"path": "missing.txt"}}
    stack = make_stack([
        {"match": "read it", "tool_calls": [missing]},
        {"tool_calls": [missing]},
        {"match": "[strategy-gate]", "tool_calls": [missing]},
    ], with_tools=True)
    _, events = stack.turn("read it")
    end = finished(events)
    assert status_name(end) == "max_iterations" and "no progress" in end.reason
    assert "duplicate_call" in end.handoff  # the last failure is named
    codes = [e.tool_finished.result.error.code for e in events if e.WhichOneof("event") == "tool_finished"]
    assert codes[2] == "duplicate_call" and codes[0] == codes[1] != ""


def test_a_tool_call_gets_no_more_than_the_turns_remaining_time(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "wait", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
    ], with_tools=True, turn_timeout_seconds=3)
    sid, events = stack.turn("wait for it")
    end = finished(events)
    assert status_name(end) == "timeout" and end.duration_ms < 15_000
    result = tool_results(events)[0]
    assert not result.ok and result.error.code in ("tool_timeout", "cancelled")
    roles = [m["role"] for m in stack.runtime.sessions[sid].session.messages]
    assert roles == ["user", "assistant", "tool"]  # paired even though the clock cut the call
