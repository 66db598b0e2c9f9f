"""The session's tool registry, and a registered loop tool run by the dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from services.kernel.netgrants import SessionGrants
from services.loop.core.approvals import Pending
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import ToolCall, ToolChunkEvent, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import EventBody, ToolFinished
from services.loop.policy.permissions import Level, Verdict, decide_permission
from services.loop.tools.dispatch import DispatchContext, run_batch
from services.loop.tools.registry import ToolRegistry


async def _echo(ctx: ToolContext, call: ToolCall, args: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome("", "", True, f"echo {args.get('text', '')} in {ctx.workspace}")


async def _broken(ctx: ToolContext, call: ToolCall, args: dict[str, Any]) -> ToolOutcome:
    if "text" not in args:
        raise ValueError("send `text`")
    raise AuxiliaryError("history", "index unreadable")


def test_a_service_tool_wins_over_a_loop_tool_of_the_same_name() -> None:
    registry = ToolRegistry([ToolDef("read", "loop's", handler=_echo), ToolDef("mine", "x", handler=_echo)])
    registry.set_remote([ToolDef("read", "service's", permission=Level.ALLOW)])
    read = registry.get("read")
    assert read is not None and read.description == "service's" and not read.local
    assert [t.name for t in registry.all()] == ["read", "mine"]


def test_deferred_tools_are_offered_only_once_loaded() -> None:
    registry = ToolRegistry([ToolDef("a", "always"), ToolDef("job_stop", "stop a background job", deferred=True),
                             ToolDef("memory_write", "remember a note", deferred=True)])
    assert [t.name for t in registry.visible()] == ["a"]
    found = registry.search("background job")
    assert [t.name for t in found] == ["job_stop"]
    registry.load(t.name for t in found)
    registry.load(["no_such_tool"])
    assert [t.name for t in registry.visible()] == ["a", "job_stop"] and registry.loaded == {"job_stop"}
    assert registry.names() == ["a"]


def test_registered_tools_outlive_a_new_local_set() -> None:
    registry = ToolRegistry([ToolDef("todo_write", "t", handler=_echo)])
    registry.register(ToolDef("history_search", "search older history", handler=_echo))
    registry.set_local([])
    assert registry.get("history_search") is not None and registry.get("todo_write") is None
    assert [t.name for t in registry.all()] == ["history_search"]


def test_the_model_is_sent_the_plain_chat_completions_schema() -> None:
    tool = ToolDef("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}}},
                   permission=Level.ALLOW, parallel_safe=True, handler=_echo)
    assert tool.spec == {"type": "function", "function": {
        "name": "echo", "description": "Echo text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}


class _NoRunner:
    """A ToolRunner that must not be reached: every tool here is the loop's own."""

    async def open_session(self, session_id: str, workspace: str, secret_env_names: list[str]) -> list[str]:
        raise AssertionError("not used")

    async def close_session(self, session_id: str) -> None:
        raise AssertionError("not used")

    async def list_tools(self, session_id: str) -> list[ToolDef]:
        raise AssertionError("not used")

    def call(self, session_id: str, call_id: str, tool: str, arguments_json: str, timeout_seconds: float,
             on_egress: object = None
             ) -> AsyncIterator[ToolChunkEvent | ToolOutcome]:
        raise AssertionError(f"{tool} went to the tools service")

    async def dry_run(self, session_id: str, call_id: str, tool: str, arguments_json: str,
                      timeout_seconds: float) -> ToolOutcome:
        raise AssertionError("not used")

    async def session_egress(self, session_id: str, allow: str = "", revoke: str = "") -> SessionGrants:
        raise AssertionError("not used")


def _run(registry: ToolRegistry, calls: list[ToolCall], remaining: float = 60.0
         ) -> tuple[DispatchContext, list[EventBody], list[str]]:
    events: list[EventBody] = []
    degraded: list[str] = []

    def gate(tool: ToolDef, arguments: dict[str, Any]) -> Verdict:
        return decide_permission(tool.name, arguments, declared=tool.permission, trusted=tool.local)

    async def go() -> DispatchContext:
        ctx = DispatchContext(session_id="s1", workspace="/ws", runner=_NoRunner(), registry=registry,
                              allowed_always=[], interactive=False, emit=events.append, pending=Pending(1),
                              remaining=lambda: remaining, gate=gate,
                              on_degraded=lambda component, reason: degraded.append(f"{component}: {reason}"))
        await run_batch(ctx, calls)
        return ctx

    return asyncio.run(go()), events, degraded


def test_a_registered_loop_tool_runs_its_handler_without_asking() -> None:
    registry = ToolRegistry()
    registry.register(ToolDef("echo", "Echo text.", permission=Level.ALLOW, handler=_echo))
    ctx, events, _ = _run(registry, [ToolCall("c1", "echo", '{"text": "hi"}')])
    outcome = ctx.outcomes["c1"]
    assert (outcome.call_id, outcome.tool, outcome.ok, outcome.output) == ("c1", "echo", True, "echo hi in /ws")
    assert [e.kind for e in events] == ["tool_started", "tool_finished"]
    assert isinstance(events[1], ToolFinished) and events[1].result is outcome


def test_a_handlers_argument_and_service_failures_become_the_calls_result() -> None:
    registry = ToolRegistry([ToolDef("history_search", "h", permission=Level.ALLOW, handler=_broken)])
    ctx, _, degraded = _run(registry, [ToolCall("c1", "history_search", "{}"),
                                       ToolCall("c2", "history_search", '{"text": "x"}')])
    assert ctx.outcomes["c1"].error_code == "invalid_arguments" and "send `text`" in ctx.outcomes["c1"].output
    assert ctx.outcomes["c2"].error_code == "history_unavailable"
    assert degraded == ["history: index unreadable"]


def test_a_loop_tool_declaring_warn_asks_first_and_an_unanswered_ask_denies() -> None:
    registry = ToolRegistry([ToolDef("risky", "r", permission=Level.WARN, handler=_echo)])
    ctx, events, _ = _run(registry, [ToolCall("c1", "risky", "{}")], remaining=0.05)
    assert [e.kind for e in events] == ["tool_started", "approval_requested", "approval_resolved", "tool_finished"]
    assert ctx.outcomes["c1"].error_code == "denied_by_user" and "(timeout)" in ctx.outcomes["c1"].output
