"""Every tool a session can offer (tools service, memory, MCP, subagents, plans, skills, compaction,
webfetch, all on) has one definition: the schema the model is sent is that definition's, a call
built from the schema parses, and each required field left out, each field of the wrong type and a
field the tool does not have are refused with the same sentence shape, before anything runs. The
model sending arguments that are not JSON gets the same clear error through the running loop."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import mcp_gateway_pb2

from services.kernel.tool_args import ArgumentError, parse_args, schema_of
from services.loop.core.ports import ToolDef
from services.tools.errors import ToolError
from services.tools.schemas import SPECS_BY_NAME, validate_arguments
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace
from tests.support.mcp_wait import wait_state
from tests.support.tool_examples import WRONG, example, spoiled

__all__ = ["fake", "make_stack", "workspace"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
# What a session with every feature on offers; a new tool joins this list and is checked like the rest.
EVERY_TOOL = {
    "read", "write", "edit", "glob", "grep", "bash", "job_start", "job_output", "job_list", "job_stop",
    "todo_write", "tool_search", "ask_user", "memory_search", "memory_write", "mcp_call", "mcp_describe",
    "mcp_resources", "webfetch", "subAgent", "subagent_apply", "skill", "skill_propose", "acceptance_propose",
    "history_search", "checkpoint_write",
}


def _full_stack(make_stack: Callable[..., LoopStack], script: list[dict[str, Any]] | None = None) -> LoopStack:
    demo = {"name": "demo", "type": "local", "command": [sys.executable, str(DEMO), "stdio"]}
    return make_stack(script or [], with_tools=True, memory="service", mcp_servers=[demo])


def _tools(stack: LoopStack, sid: str) -> list[ToolDef]:
    return list(stack.runtime.sessions[sid].tools.all())


def _definition(tool: ToolDef) -> type[Any]:
    """The arguments dataclass a tool's schema comes from: the loop's own, or the tools service's."""
    if tool.args is not None:
        return tool.args
    return SPECS_BY_NAME[tool.name].args


def test_every_tool_a_session_offers_sends_the_schema_its_parse_checks(make_stack: Callable[..., LoopStack]) -> None:
    stack = _full_stack(make_stack)
    sid = stack.open(interactive=True).session_id
    tools = _tools(stack, sid)
    assert {t.name for t in tools} == EVERY_TOOL
    for tool in tools:
        definition = _definition(tool)
        assert tool.parameters == schema_of(definition), tool.name
        valid = example(tool.parameters)
        tool.check(valid)  # the dispatcher's check
        parse_args(definition, valid)
        if tool.args is None:  # and the tools service's own, on the same definition
            validate_arguments(SPECS_BY_NAME[tool.name], valid)
        cases = spoiled(tool.parameters, valid)
        assert cases or not tool.parameters.get("properties"), tool.name
        for case in cases:
            with pytest.raises(ArgumentError, match=re.escape(case.says)):
                tool.check(case.arguments)
            if tool.args is None:
                with pytest.raises(ToolError, match=re.escape(case.says)) as refused:
                    validate_arguments(SPECS_BY_NAME[tool.name], case.arguments)
                assert refused.value.code == "invalid_arguments", (tool.name, case.what)


def test_a_mistyped_call_of_every_tool_is_refused_in_the_running_loop_before_anything_runs(
        make_stack: Callable[..., LoopStack]) -> None:
    """One batch calls every tool with its first field of the wrong type: each call comes back as
    ``invalid_arguments`` naming that field, and no approval or question is asked (the gate and the
    handlers never saw them)."""
    probe = _full_stack(make_stack)
    tools = _tools(probe, probe.open(interactive=True).session_id)
    probe.close()
    calls: list[dict[str, Any]] = []
    for tool in sorted(tools, key=lambda t: t.name):
        valid = example(tool.parameters)
        first, prop = next(iter(tool.parameters["properties"].items()), ("zz_unknown", {"type": "string"}))
        calls.append({"name": tool.name, "arguments": {**valid, first: WRONG[prop["type"]]}, "field": first})
    stack = _full_stack(make_stack, [
        {"match": "call every tool", "tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls]},
        {"match": "invalid_arguments", "text": "Every call was refused."},
    ])
    sid = stack.open(interactive=True, auto_approve=False).session_id
    _, events = stack.turn("call every tool wrongly", session_id=sid)
    assert status_name(finished(events)) == "completed", finished(events).reason
    results = {e.tool_finished.result.tool: e.tool_finished.result for e in events
               if e.WhichOneof("event") == "tool_finished"}
    assert set(results) == EVERY_TOOL
    for call in calls:
        result = results[str(call["name"])]
        assert (result.ok, result.error.code) == (False, "invalid_arguments"), (call["name"], result.output)
        assert f"`{call['field']}`" in result.error.message, (call["name"], result.error.message)
    asked = {e.WhichOneof("event") for e in events} & {"approval_requested", "question_asked"}
    assert not asked
    assert not (stack.workspace / "x").exists()  # write/edit/bash never ran


def test_an_mcp_calls_input_is_checked_against_the_servers_own_schema_before_the_call(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = _full_stack(make_stack, [
        {"match": "add two numbers", "tool_calls": [
            {"name": "mcp_call", "arguments": {"server": "demo", "tool": "add", "input": {"a": 2}}},
            {"name": "mcp_call", "arguments": {"server": "demo", "tool": "add", "input": {"a": 2, "b": "three"}}}]},
        {"match": "invalid_arguments", "tool_calls": [
            {"name": "mcp_call", "arguments": {"server": "demo", "tool": "add", "input": {"a": 2, "b": 3}}}]},
        {"match": "5", "text": "2 + 3 = 5."},
    ])
    wait_state(stack, "demo", mcp_gateway_pb2.SERVER_STATE_CONNECTED)
    _, events = stack.turn("add two numbers")
    assert status_name(finished(events)) == "completed", finished(events).reason
    done = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert [(r.ok, r.error.code) for r in done] == [(False, "invalid_arguments")] * 2 + [(True, "")]
    assert "`input.b` is required" in done[0].error.message
    assert "`input.b` must be an integer" in done[1].error.message


@pytest.mark.parametrize("raw", ['{"path": ', "[1, 2]", "not json at all"])
def test_tool_call_arguments_that_are_not_a_json_object_get_the_uniform_error_and_the_turn_goes_on(
        make_stack: Callable[..., LoopStack], raw: str) -> None:
    stack = make_stack([
        {"match": "read the notes", "tool_calls": [{"name": "todo_write", "arguments_raw": raw},
                                                   {"name": "read", "arguments_raw": raw}]},
        {"match": "send the arguments again as one valid JSON object", "text": "I will resend them."},
    ], with_tools=True)
    _, events = stack.turn("read the notes")
    end = finished(events)
    assert status_name(end) == "completed", (end.reason, stack.fake.errors)
    done = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert [(r.tool, r.ok, r.error.code) for r in done] == [("todo_write", False, "invalid_arguments"),
                                                          ("read", False, "invalid_arguments")]
    assert all("not a JSON object" in r.error.message for r in done), [r.error.message for r in done]
    assert json.dumps(stack.fake.chat_requests[-1].messages).count("send the arguments again") == 2
