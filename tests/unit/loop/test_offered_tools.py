"""A tool the system message or a tool result names is in that request's tools: loaded deferred
tools go at the end in load order, a child's system message names only its own tools, and the
e2e checker that enforces it reads names exactly."""

from __future__ import annotations

from services.loop.core.ports import ToolDef
from services.loop.policy.permissions import Level, PermissionMode, decide_permission
from services.loop.subagents.apply_offer import OfferApply
from services.loop.subagents.packet import SubagentPacket
from services.loop.tools.registry import ToolRegistry
from services.loop.turn.prompt import (
    ASK_LINE,
    NO_ASK_LINE,
    base_instructions,
    for_offered_tools,
    with_mcp_catalog,
)
from tests.support.tool_mentions import missing_tools, named_tools


def _tool(name: str, deferred: bool = False) -> ToolDef:
    return ToolDef(name, f"{name} tool", deferred=deferred)


def test_loaded_deferred_tools_are_appended_in_the_order_they_were_loaded() -> None:
    registry = ToolRegistry([_tool("read"), _tool("mcp_call", True), _tool("skill", True), _tool("bash")])
    assert [t.name for t in registry.visible()] == ["read", "bash"]
    registry.load(["skill"])
    registry.load(["mcp_call", "skill"])
    assert [t.name for t in registry.visible()] == ["read", "bash", "skill", "mcp_call"]


def test_a_child_with_changes_makes_subagent_apply_offered_and_asked_like_an_edit() -> None:
    registry = ToolRegistry([_tool("read"), _tool("subagent_apply", True)])
    offer = OfferApply(registry.load)
    offer.after_end(None, SubagentPacket(run_id="r", name="n", status="completed"))  # type: ignore[arg-type]
    assert "subagent_apply" not in [t.name for t in registry.visible()]
    offer.after_end(None, SubagentPacket(run_id="r", name="n", status="completed",  # type: ignore[arg-type]
                                         worktree={"path": "/w", "branch": "b"}))
    assert [t.name for t in registry.visible()][-1] == "subagent_apply"
    verdict = decide_permission("subagent_apply", {"run_id": "r"}, set(), PermissionMode.CONFIRM)
    assert verdict.level is Level.WARN and "unknown tool" not in verdict.reason


def test_a_session_nobody_can_answer_is_not_told_to_ask_the_user() -> None:
    assert ASK_LINE in base_instructions(True)
    assert "ask_user" not in base_instructions(False) and NO_ASK_LINE in base_instructions(False)


def test_a_childs_system_message_names_only_the_tools_it_has() -> None:
    parent = with_mcp_catalog(base_instructions(True), "- demo: add (call with mcp_call)")
    child = for_offered_tools(parent, {"read", "bash", "todo_write"})
    assert named_tools(child, {"tool_search", "ask_user", "mcp_call", "todo_write"}) == {"todo_write"}
    assert "<mcp-catalog>" not in child


def test_the_checker_reports_a_named_tool_that_is_not_offered() -> None:
    body = {"tools": [{"type": "function", "function": {"name": "read"}}],
            "messages": [{"role": "system", "content": "Call tool_search to load more.\n\n<skills>\n- a\n</skills>"},
                         {"role": "user", "content": "hi"},
                         {"role": "tool", "content": "call subagent_apply with run_id x"},
                         {"role": "tool", "content": "ok\n\n<task-state>\nuse todo_write\n</task-state>"}]}
    assert missing_tools(body) == {"system": {"tool_search", "skill"}, "tool result 2": {"subagent_apply"}}
    assert named_tools("see my_module.tool_search_x or tool_search()", {"tool_search"}) == {"tool_search"}
    assert missing_tools({**body, "tools": []}) == {}  # a step without tools asks for a text answer
