"""Tools the loop answers itself: ask_user, tool_search, memory_*, mcp_call.

Their schemas are kept short on purpose (every byte is paid on every step);
memory_* and mcp_call use the schemas their services define (pure modules, no
SDK or storage import);
the ones a model rarely needs are deferred and only sent after ``tool_search``
loaded them. Memory and MCP are auxiliary: when their service fails the call
gets an error result and the turn emits a Degraded event, never a failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.loop.ports import ToolChunkEvent, ToolOutcome
from services.loop.tasks import TODO_WRITE_TOOL
from services.mcp_gateway.tool_schema import MCP_CALL_SCHEMA
from services.memory.tools_schema import MEMORY_SEARCH_SCHEMA, MEMORY_WRITE_SCHEMA

ToolDict = dict[str, Any]


class AuxiliaryError(Exception):
    """An auxiliary service (memory, MCP gateway) failed; ``component`` names it."""

    def __init__(self, component: str, reason: str) -> None:
        super().__init__(f"{component}: {reason}")
        self.component = component
        self.reason = reason


@dataclass(frozen=True)
class MemorySearchResult:
    """What ``memory_search`` gives the model, and whether recall ran past its budget."""

    text: str
    timed_out: bool = False


class MemoryClient(Protocol):
    """The memory service as the loop uses it.

    ``search`` and ``write`` take the model's arguments as sent; invalid ones raise
    ``ValueError`` with a sentence that says what to send instead.
    """

    async def search(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> MemorySearchResult: ...

    async def write(self, workspace: str, args: dict[str, Any], timeout_seconds: float) -> str: ...

    async def constraints(self, workspace: str, max_chars: int, timeout_seconds: float) -> str: ...

    async def existing_notes(self, workspace: str, limit: int, timeout_seconds: float) -> list[tuple[str, str]]:
        """``(id, text)`` of recent notes, for the harvest extractor to update instead of duplicate."""
        ...

    async def reconcile(self, workspace: str, candidates: list[dict[str, Any]], timeout_seconds: float) -> int:
        """Send harvested candidates (NoteCandidate fields by name); returns how many were applied."""
        ...


@dataclass(frozen=True)
class McpCatalog:
    """What the gateway offers right now."""

    text: str
    """The budgeted catalog for the ``<mcp-catalog>`` tail block."""
    permissions: dict[str, str] = field(default_factory=dict)
    """``server__tool`` -> "allow" / "warn" / "deny" (the servers' own permission settings)."""
    degraded: dict[str, str] = field(default_factory=dict)
    """Server name -> why it failed (sticky; the loop reports each server once)."""


class McpClient(Protocol):
    """The MCP gateway as the loop uses it."""

    async def catalog(self, timeout_seconds: float) -> McpCatalog: ...

    async def call(
        self, call_id: str, server: str, tool: str, input_json: str, timeout_seconds: float,
        on_chunk: Callable[[ToolChunkEvent], None],
    ) -> ToolOutcome: ...


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str],
          *, deferred: bool = False, permission: str = "allow") -> ToolDict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
        "x-permission": permission,
        "x-parallel-safe": False,
        "x-deferred": deferred,
        "x-local": True,
    }


ASK_USER = _tool(
    "ask_user", "Ask the user one question when a decision needs them; returns their answer.",
    {"question": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}}},
    ["question"],
)
TOOL_SEARCH = _tool(
    "tool_search", "Find and load tools not listed yet (background jobs, memory_write, MCP). Query: keywords.",
    {"query": {"type": "string"}}, ["query"],
)


def _local(schema: ToolDict, *, deferred: bool = False, permission: str = "allow") -> ToolDict:
    """A tool schema owned by another package, marked as answered by the loop."""
    return {**schema, "x-permission": permission, "x-parallel-safe": False, "x-deferred": deferred,
            "x-local": True}


# The memory service and the MCP gateway own these schemas (every parameter the spec gives them).
MEMORY_SEARCH = _local(MEMORY_SEARCH_SCHEMA)
MEMORY_WRITE = _local(MEMORY_WRITE_SCHEMA, deferred=True)
MCP_CALL = _local(MCP_CALL_SCHEMA, deferred=True, permission="warn")

LOCAL_TOOL_NAMES = frozenset({"ask_user", "tool_search", "memory_search", "memory_write", "mcp_call", "todo_write"})


def local_tools(interactive: bool, has_memory: bool, has_mcp: bool) -> list[ToolDict]:
    """The loop's own tools for a session (ask_user only when someone can answer)."""
    todo = {**TODO_WRITE_TOOL, "x-permission": "allow", "x-parallel-safe": False, "x-deferred": False,
            "x-local": True}
    tools = [todo, TOOL_SEARCH]
    if interactive:
        tools.append(ASK_USER)
    if has_memory:
        tools += [MEMORY_SEARCH, MEMORY_WRITE]
    if has_mcp:
        tools.append(MCP_CALL)
    return tools


def tool_name(tool: ToolDict) -> str:
    return str(tool.get("function", {}).get("name", ""))


def visible_tools(all_tools: list[ToolDict], loaded: set[str]) -> list[ToolDict]:
    """What the model is sent: non-deferred tools plus deferred ones it loaded, without ``x-`` keys."""
    out = []
    for tool in all_tools:
        if tool.get("x-deferred") and tool_name(tool) not in loaded:
            continue
        out.append({k: v for k, v in tool.items() if not k.startswith("x-")})
    return out


def search_tools(all_tools: list[ToolDict], query: str, limit: int = 5) -> list[ToolDict]:
    """Deferred tools ranked by how many query words their name and description contain."""
    words = [w for w in re.split(r"[^a-z0-9_]+", query.lower()) if w]
    scored = []
    for tool in all_tools:
        if not tool.get("x-deferred"):
            continue
        fn = tool.get("function", {})
        hay = f"{fn.get('name', '')} {fn.get('description', '')}".lower()
        score = sum(1 for w in words if w in hay)
        if score or not words:
            scored.append((score, tool_name(tool), tool))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [tool for _, _, tool in scored[:limit]]


def tool_search_outcome(call_id: str, found: list[ToolDict]) -> ToolOutcome:
    """The tool_search result listing what got loaded."""
    if not found:
        return ToolOutcome(call_id, "tool_search", True, "no deferred tool matches; try other keywords",
                           data={"loaded": []})
    lines = [f"- {tool_name(t)}: {t['function'].get('description', '')}" for t in found]
    names = [tool_name(t) for t in found]
    return ToolOutcome(call_id, "tool_search", True, "loaded (callable from your next step):\n" + "\n".join(lines),
                       data={"loaded": names})


def error_outcome(call_id: str, tool: str, code: str, message: str, *, limit_hit: str = "") -> ToolOutcome:
    """A failed call the model sees as ``code: message``."""
    return ToolOutcome(call_id, tool, False, f"{code}: {message}", error_code=code, error_message=message,
                       limit_hit=limit_hit)


def mcp_input_json(arguments: dict[str, Any]) -> str:
    value = arguments.get("input") or {}
    return json.dumps(value if isinstance(value, dict) else {})
