"""One real turn through the loop service: numbered events, statuses, the saved session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, finished, kinds, status_name


def test_a_turn_with_a_local_tool_call_streams_numbered_events_and_completes(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "find a job tool", "text": "Looking.", "tool_calls": [
            {"name": "tool_search", "arguments": {"query": "spreadsheet pivot"}}]},
        {"match": "no deferred tool matches", "text": "No such tool here."},
    ])
    sid, events = stack.turn("find a job tool")
    end = finished(events)
    assert status_name(end) == "completed", (end.reason, stack.fake.errors)
    assert end.text == "No such tool here."
    seqs = [e.seq for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert {"turn_started", "text_delta", "tool_started", "tool_finished", "model_step_finished"} <= set(kinds(events))
    saved = json.loads((workspace / ".ai-coding" / "sessions" / f"{sid}.json").read_text())
    assert saved["id"] == sid
    assert stack.fake.errors == []


def test_a_turn_without_a_clock_runs_tool_calls_with_a_finite_deadline(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "say hi", "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"match": "hi", "tool_calls": [{"name": "tool_search", "arguments": {"query": "jobs"}}]},
        {"match": "job", "text": "Said hi."},
    ], with_tools=True, turn_timeout_seconds=0)
    sid, events = stack.turn("say hi")
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "Said hi.", (end.reason, stack.fake.errors)
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert [(r.tool, r.ok) for r in results] == [("bash", True), ("tool_search", True)]
    assert stack.runtime.sessions[sid].turn is None
