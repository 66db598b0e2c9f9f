"""mcp_call through the loop, the real MCP gateway and a real MCP server (our demo server over stdio)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import loop_pb2, mcp_gateway_pb2, mcp_gateway_pb2_grpc

from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)
from tests.support.mcp_wait import wait_state
from tests.support.trust import trust_workspace

__all__ = ["fake", "make_stack", "workspace"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"


def _wait_connected(stack: LoopStack, name: str = "demo") -> None:
    _wait_state(stack, name, mcp_gateway_pb2.SERVER_STATE_CONNECTED)


def _demo(**extra: object) -> dict[str, object]:
    return {"name": "demo", "type": "local", "command": [sys.executable, str(DEMO), "stdio"], **extra}


def test_the_model_calls_an_mcp_tool_and_sees_its_result(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "echo ping", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "echo", "input": {"text": "ping"}}}]},
        {"match": "echo: ping", "text": "The server said ping back."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("ask the demo server to echo ping")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "The server said ping back."
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok and "echo: ping" in result.output


def test_progress_from_an_mcp_server_reaches_the_turn_stream_as_chunks(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "count", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "count_with_progress", "input": {"steps": 3}}}]},
        {"match": "counted to 3", "text": "Counted."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("count to three")
    assert finished(events).text == "Counted."
    chunks = [e.tool_chunk for e in events if e.WhichOneof("event") == "tool_chunk"]
    assert len(chunks) >= 2 and all(c.stream == "progress" for c in chunks)


def test_a_server_deny_beats_auto_approve_and_the_call_is_refused(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "add", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "add", "input": {"a": 1234, "b": 5678}}}]},
        {"match": "permission_denied", "text": "Not allowed to add."},
    ], mcp_servers=[_demo(permissions={"deny": ["add"]})])
    _wait_connected(stack)
    sid = stack.open(auto_approve=True).session_id
    events = stack.start(sid, "add 1234 and 5678").drain()
    assert finished(events).text == "Not allowed to add."
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.error.code == "permission_denied" and "denied" in result.error.message


def _system(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return str(messages[0]["content"])


def test_the_mcp_catalog_is_in_the_system_message_byte_stable_across_steps_and_out_of_the_tail(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "echo twice", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "echo", "input": {"text": "one"}}}]},
        {"match": "echo: one", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "echo", "input": {"text": "two"}}}]},
        {"match": "echo: two", "text": "Echoed twice."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("echo twice")
    assert finished(events).text == "Echoed twice."
    bodies = [r.body for r in stack.fake.chat_requests]
    systems = [_system(b) for b in bodies]
    assert len(systems) == 3 and len(set(systems)) == 1, "the system message changed between steps"
    catalog = systems[0].split("<mcp-catalog>\n", 1)[1].split("\n</mcp-catalog>", 1)[0]
    assert "- demo__echo(text*: string)" in catalog
    for body in bodies:
        assert "<mcp-catalog>" not in str(body["messages"][-1]["content"])  # not re-sent in the volatile tail
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert not any("MCP tool set changed" in n for n in notices)
    print(f"catalog bytes in the stable prefix (cached after step 1): {len(catalog.encode())}; "
          f"in the volatile tail per step: 0")


def test_mcp_describe_returns_a_tools_full_schema_with_nested_types(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "tally", "tool_calls": [{"name": "mcp_describe", "arguments": {"server": "demo", "tool": "tally"}}]},
        {"match": "input schema", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "tally", "input": {"groups": [{"a": [1, 2]}, {"b": [3]}]}}}]},
        {"match": "total 6", "text": "The total is 6."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("tally the groups")
    assert finished(events).text == "The total is 6."
    system = _system(stack.fake.chat_requests[0].body)
    assert "- demo__tally(groups*: array)" in system  # the catalog line is a summary
    described = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert described.tool == "mcp_describe" and described.ok
    schema = json.loads(described.output.split("input schema:\n", 1)[1])
    items = schema["properties"]["groups"]["items"]
    assert items["type"] == "object" and items["additionalProperties"]["items"]["type"] == "integer"


def test_a_changed_server_set_is_a_declared_cache_break_once(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "first", "text": "one server"},
        {"match": "second", "text": "two servers"},
        {"match": "third", "text": "still two"},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    sid, first = stack.turn("first")
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    try:
        mcp_gateway_pb2_grpc.McpGatewayStub(channel).AddServer(mcp_gateway_pb2.AddServerRequest(
            server_json=json.dumps(_demo(name="other"))), timeout=30)
    finally:
        channel.close()
    _wait_connected(stack, "other")
    _, second = stack.turn("second", session_id=sid)
    _, third = stack.turn("third", session_id=sid)
    systems = [_system(r.body) for r in stack.fake.chat_requests]
    assert systems[0] != systems[1] == systems[2]
    assert "other__echo" in systems[1] and "other__echo" not in systems[0]
    breaks = [[e.notice.text for e in events if e.WhichOneof("event") == "notice" and "MCP tool set changed"
               in e.notice.text] for events in (first, second, third)]
    assert [len(b) for b in breaks] == [0, 1, 0]
    print(f"catalog bytes: {len(systems[0]) - len(systems[0].split('<mcp-catalog>')[0])} with one server, "
          f"{len(systems[1]) - len(systems[1].split('<mcp-catalog>')[0])} with two")


def _answer_questions(answers: list[str], asked: list[loop_pb2.QuestionAsked]
                      ) -> Callable[[loop_pb2.TurnEvent, Conversation], None]:
    """Answer each question with the next of ``answers`` (and record what was asked)."""

    def answer(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "question_asked":
            asked.append(event.question_asked)
            conv.send(loop_pb2.ClientMessage(answer=loop_pb2.QuestionAnswer(
                request_id=event.question_asked.request_id, answer=answers[len(asked) - 1])))

    return answer


def test_an_mcp_servers_elicitation_reaches_the_user_as_one_question_per_field(
        make_stack: Callable[..., LoopStack]) -> None:
    signup = {"match": "sign me up", "tool_calls": [{"name": "mcp_call", "arguments": {
        "server": "demo", "tool": "signup", "input": {}}}]}
    stack = make_stack([signup, {"match": "signed up", "text": "You are signed up."},
                        signup, {"match": "free plan", "text": "Free it is."},
                        signup, {"match": "signup declined", "text": "Not signed up."}],
                       mcp_servers=[_demo(auto_approve=True)])
    _wait_connected(stack)
    sid = stack.open(interactive=True).session_id
    asked: list[loop_pb2.QuestionAsked] = []
    # A plan that is not offered is asked again; then a valid one.
    events = stack.start(sid, "sign me up").drain(_answer_questions(["Ada", "gold", "pro"], asked))
    assert finished(events).text == "You are signed up."
    assert "MCP server 'demo' asks: Sign up for the demo" in asked[0].question and "Your name" in asked[0].question
    assert list(asked[1].options) == ["free", "pro"] and "Enter for 'free'" in asked[1].question
    assert "plan is one of free, pro; try again" in asked[2].question
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok and result.output == "signed up Ada on the pro plan", result.output
    # Enter on the plan takes its default; /decline refuses the whole form.
    asked.clear()
    events = stack.start(sid, "sign me up").drain(_answer_questions(["Grace", ""], asked))
    assert finished(events).text == "Free it is." and len(asked) == 2
    asked.clear()
    events = stack.start(sid, "sign me up").drain(_answer_questions(["/decline"], asked))
    assert finished(events).text == "Not signed up." and len(asked) == 1


def test_an_elicitation_in_a_session_nobody_answers_is_declined_without_a_question(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "sign me up", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "signup", "input": {}}}]},
        {"match": "signup declined", "text": "It needs you there."},
    ], mcp_servers=[_demo(auto_approve=True)])
    _wait_connected(stack)
    _, events = stack.turn("sign me up", interactive=False)
    assert finished(events).text == "It needs you there."
    assert "question_asked" not in [e.WhichOneof("event") for e in events]


def _wait_state(stack: LoopStack, name: str, state: int) -> None:
    wait_state(stack, name, state)


def test_a_failed_server_is_warned_about_once_per_session_not_every_turn(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "ok", "repeat": "forever"}], mcp_servers=[
        {"name": "broken", "type": "local", "command": ["/nonexistent/aic-no-such-mcp-server"]}])
    _wait_state(stack, "broken", mcp_gateway_pb2.SERVER_STATE_FAILED)

    def warnings(events: list[loop_pb2.TurnEvent]) -> list[str]:
        return [e.degraded.reason for e in events
                if e.WhichOneof("event") == "degraded" and e.degraded.component == "mcp:broken"]

    sid, first = stack.turn("one")
    second = stack.start(sid, "two").drain()
    third = stack.start(sid, "three").drain()
    assert len(warnings(first)) == 1 and "command not found" in warnings(first)[0], warnings(first)
    assert warnings(second) == [] and warnings(third) == []
    _, other_session = stack.turn("four")  # a new session is told once too
    assert len(warnings(other_session)) == 1


def _write_mcp_json(stack: LoopStack) -> Path:
    path = stack.workspace / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"proj demo": {"command": sys.executable,
                                                             "args": [str(DEMO), "stdio"]}}}))
    return path


def test_a_projects_mcp_json_is_not_started_untrusted_and_says_so_once(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    monkeypatch.delenv("AI_CODING_TRUST_PROJECT", raising=False)
    stack = make_stack([], mcp_servers=[])
    path = _write_mcp_json(stack)
    first = list(stack.open().warnings)
    assert [w for w in first if ".mcp.json" in w] == [
        f"{path}: server 'proj demo' not started: not approved for this workspace (a repository's file can run "
        f"any program); run `ai-coding trust -w {os.path.realpath(stack.workspace)}` to see and approve it"]
    assert not [w for w in stack.open().warnings if ".mcp.json" in w]  # said once
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    try:
        servers = mcp_gateway_pb2_grpc.McpGatewayStub(channel).ListServers(
            mcp_gateway_pb2.ListServersRequest(), timeout=10).servers
    finally:
        channel.close()
    assert [s.name for s in servers] == []


def test_a_trusted_projects_mcp_json_servers_are_callable_and_not_written_to_the_users_sidecar(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    stack = make_stack([
        {"match": "echo", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "proj-demo", "tool": "echo", "input": {"text": "from the project"}}}]},
        {"match": "echo: from the project", "text": "The project's server answered."},
    ], mcp_servers=[])
    _write_mcp_json(stack)
    trust_workspace(Path(stack.workspace))
    sid = stack.open().session_id
    _wait_connected(stack, "proj-demo")
    assert not [w for w in stack.open().warnings if ".mcp.json" in w]  # a second session registers again quietly
    events = stack.start(sid, "echo through the project server").drain()
    assert finished(events).text == "The project's server answered."
    assert not list(isolated_home.rglob("mcp.local.yaml"))


def test_time_a_server_waits_for_the_users_answers_does_not_count_against_its_call_timeout(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "sign me up", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "signup", "input": {}}}]},
        {"match": "signed up", "text": "Done."},
    ], mcp_servers=[_demo(auto_approve=True, timeout={"execution": 1000})])
    _wait_connected(stack)
    sid = stack.open(interactive=True).session_id
    asked: list[loop_pb2.QuestionAsked] = []
    answer = _answer_questions(["Ada", "pro"], asked)

    def slowly(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "question_asked":
            time.sleep(1.5)  # a person typing: longer than the server's 1 s execution limit
        answer(event, conv)

    events = stack.start(sid, "sign me up").drain(slowly)
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok and result.output == "signed up Ada on the pro plan", result.error
    assert finished(events).text == "Done."
