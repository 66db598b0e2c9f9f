"""The AgentLoop RPCs besides the turn itself: bad input, listing, commands, batched streams, traces."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import loop_pb2

from services.loop.core.ports import ToolDef
from tests.service.loop.harness import LoopStack, finished, status_name


def test_bad_requests_get_one_clear_error_with_a_stable_reason(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([])
    with pytest.raises(grpc.RpcError) as relative:
        stack.stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace="relative/dir"), timeout=10)
    assert relative.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "absolute" in (relative.value.details() or "")
    with pytest.raises(grpc.RpcError) as missing:
        stack.stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace="/nonexistent/ws"), timeout=10)
    assert missing.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a directory" in (missing.value.details() or "")
    assert not Path("/nonexistent").exists()
    with pytest.raises(grpc.RpcError) as unknown:
        stack.open("nosuchsession")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND and "sessions list" in (unknown.value.details() or "")
    with pytest.raises(grpc.RpcError) as not_open:
        stack.start("0123456789abcdef", "hi").drain()
    assert not_open.value.code() == grpc.StatusCode.NOT_FOUND
    sid = stack.open().session_id
    with pytest.raises(grpc.RpcError) as wrong_first:
        from tests.service.loop.harness import Conversation

        Conversation(stack.stub, loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input="x"))).drain()
    assert wrong_first.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "start or attach" in (wrong_first.value.details() or "")
    with pytest.raises(grpc.RpcError) as empty:
        stack.start(sid, "   ").drain()
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_unknown_model_name_is_refused_naming_the_configured_ones(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([])
    with pytest.raises(grpc.RpcError) as err:
        stack.stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=str(stack.workspace), model="gpt-9"),
                               timeout=10)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "fake" in (err.value.details() or "")


def test_sessions_are_listed_newest_first_with_a_preview(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "ok", "repeat": "forever"}])
    first, _ = stack.turn("first session question")
    second, _ = stack.turn("second session question")
    listed = stack.stub.ListSessions(loop_pb2.ListSessionsRequest(workspace=str(stack.workspace)), timeout=10)
    assert [s.session_id for s in listed.sessions] == [second, first]
    assert listed.sessions[0].preview == "second session question" and listed.sessions[0].message_count == 2
    assert not any(s.open for s in listed.sessions)  # loaded but idle with no client attached


def test_slash_commands_answer_one_line_and_json(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "plan", "tool_calls": [{"name": "todo_write", "arguments": {
        "add": [{"content": "write code"}]}}]}, {"text": "planned"}])
    sid, _ = stack.turn("plan it")
    todo = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="todo"), timeout=10)
    assert "write code" in todo.text and json.loads(todo.data_json)["items"][0]["content"] == "write code"
    status = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="status"), timeout=10)
    assert json.loads(status.data_json)["turns"] == 1
    config = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="config"), timeout=10)
    assert "ai.turn_timeout_seconds: 1800.0  (default)" in config.text
    assert "models.fake.api_key: ***" in config.text and "models.fake.base_url: http://" in config.text
    assert json.loads(config.data_json)["values"]["ai.max_tool_iterations"] == 50
    perms = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="permissions", args="readonly"),
                                  timeout=10)
    assert perms.text.startswith("permissions: readonly")
    assert stack.runtime.sessions[sid].gate(ToolDef("write", "edits files"), {"path": "a"}).level == "deny"
    trace = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="trace"), timeout=10)
    assert "turn 1: completed · 2 steps" in trace.text
    assert "compaction.threshold: 0.8  (default)" in config.text
    budget = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="budget"), timeout=10)
    assert "compaction threshold" in budget.text and json.loads(budget.data_json)["context"]["window"] == 128000


def test_the_batched_stream_carries_the_same_numbered_events(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "streamed in many small pieces", "chunk_chars": 2}])
    sid = stack.open().session_id
    start = loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="go"))
    events = [e for batch in stack.stub.ConverseBatched(iter([start]), timeout=60) for e in batch.events]
    assert status_name(finished(events)) == "completed"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert "".join(e.text_delta.text for e in events if e.WhichOneof("event") == "text_delta") == (
        "streamed in many small pieces")


def test_traces_are_written_per_turn_with_secrets_redacted(make_stack: Callable[..., LoopStack],
                                                           workspace: Path) -> None:
    stack = make_stack([{"text": "your key sk-abcdefghijklmnopqrstuvwx is set"}])
    sid, _ = stack.turn("show my key sk-abcdefghijklmnopqrstuvwx please")
    trace_dir = workspace / ".ai-coding" / "traces" / sid
    text = (trace_dir / "turn-1.jsonl").read_text()
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "[redacted]" in text
    kinds = [json.loads(line)["kind"] for line in text.splitlines()]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    summary = json.loads((trace_dir / "summary.json").read_text())
    assert summary["turns"][0]["status"] == "completed"


def test_ask_user_waits_for_the_answer_and_a_non_interactive_session_gets_no_user(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "which", "tool_calls": [{"name": "ask_user", "arguments": {
            "question": "Which database?", "options": ["sqlite", "postgres"]}}]},
        {"match": "user answered: sqlite", "text": "Using sqlite."},
        {"match": "pick", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which one?"}}]},
        {"match": "unknown_tool", "text": "Nobody to ask; I chose."},
    ])
    sid = stack.open(interactive=True).session_id

    def answer(event: loop_pb2.TurnEvent, conv: object) -> None:
        if event.WhichOneof("event") == "question_asked":
            assert list(event.question_asked.options) == ["sqlite", "postgres"]
            conv.send(loop_pb2.ClientMessage(answer=loop_pb2.QuestionAnswer(  # type: ignore[attr-defined]
                request_id=event.question_asked.request_id, answer="sqlite")))

    events = stack.start(sid, "which db").drain(answer)
    assert finished(events).text == "Using sqlite."
    # A non-interactive session is not offered ask_user at all (the tool list is the first harness).
    _, events = stack.turn("pick one", auto_approve=True, interactive=False)
    assert finished(events).text == "Nobody to ask; I chose."


def test_model_switches_by_name_and_an_unknown_name_answers_one_line(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([])
    sid = stack.open().session_id
    bad = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="model", args="gpt-9"), timeout=10)
    assert bad.text.startswith("cannot switch model") and "fake" in bad.text
    good = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="model", args="fake"), timeout=10)
    assert good.text == "model: fake · configured: fake"  # the bare /model lists what there is


def test_a_tools_service_that_comes_up_after_the_session_opened_is_attached_at_the_next_turn(
        make_stack: Callable[..., LoopStack], short_dir: Path) -> None:
    from services.kernel.config import Config
    from services.tools.main import build as build_tools

    stack = make_stack([
        {"match": "first", "text": "no tools yet"},
        {"match": "second", "tool_calls": [{"name": "bash", "arguments": {"command": "echo attached"}}]},
        {"match": "attached", "text": "tools work now"},
    ])
    sid = stack.open().session_id
    _, events = stack.turn("first", session_id=sid)
    assert "tools" in [e.degraded.component for e in events if e.WhichOneof("event") == "degraded"]
    stack.services.serve(f"unix:{short_dir}/no-tools.sock", build_tools(Config(data={})))
    _, events = stack.turn("second", session_id=sid)
    assert finished(events).text == "tools work now", [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"]


def test_an_idle_session_dropped_from_memory_is_loaded_again_by_the_next_turn(
        make_stack: Callable[..., LoopStack]) -> None:
    from services.loop.session import open_sessions as runtime_module

    stack = make_stack([{"text": "ok", "repeat": "forever"}])
    first, _ = stack.turn("the first session")
    limit = runtime_module.MAX_IDLE_SESSIONS
    for _ in range(limit + 1):
        stack.open()
    assert first not in stack.runtime.sessions
    _, events = stack.turn("still there?", session_id=first)
    assert status_name(finished(events)) == "completed"
    assert len(stack.runtime.sessions[first].session.messages) == 4


def test_an_unanswered_question_times_out_as_no_answer_and_the_turn_goes_on(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "choose", "tool_calls": [{"name": "ask_user", "arguments": {"question": "A or B?"}}]},
        {"match": "no_answer", "text": "No answer; I picked A."},
    ], question_timeout_seconds=1)
    sid = stack.open(interactive=True).session_id
    events = stack.start(sid, "choose one").drain()
    assert finished(events).text == "No answer; I picked A."
    resolved = [e.question_resolved for e in events if e.WhichOneof("event") == "question_resolved"]
    assert resolved[0].source == "timeout"
