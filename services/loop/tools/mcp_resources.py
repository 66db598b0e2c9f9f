"""``mcp_resources``: MCP resources for the model, behind the gateway's one-tool design.

Without ``uri`` it lists a server's resources and resource templates (``resources/list``,
``resources/templates/list``); with ``uri`` it reads one (``resources/read``). Deferred: sent
only once the model loads it (``tool_search``, or by calling it by name); it comes after the
loop's other own tools. Read-only, so the gate allows it.
"""

from __future__ import annotations

from typing import Any

from services.loop.core.domain import call_deadline
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.policy.permissions import Level
from services.mcp_gateway.tool_schema import MCP_RESOURCES_SCHEMA


async def _mcp_resources(ctx: ToolContext, call: ToolCall, args: dict[str, Any]) -> ToolOutcome:
    server = str(args.get("server") or "")
    if ctx.mcp is None:
        return ToolOutcome(call.id, call.name, False, "unavailable: MCP is not available in this session",
                           error_code="unavailable", error_message="MCP is not available in this session")
    if not server:
        return ToolOutcome(call.id, call.name, False, "invalid_arguments: name the server",
                           error_code="invalid_arguments", error_message="server is required")
    return await ctx.mcp.resources(call.id, server, str(args.get("uri") or ""), call_deadline(ctx.remaining()))


MCP_RESOURCES = ToolDef.from_spec(MCP_RESOURCES_SCHEMA, permission=Level.ALLOW, deferred=True,
                                  handler=_mcp_resources)
