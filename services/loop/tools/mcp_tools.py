"""The loop's MCP tools: ``mcp_call``, ``mcp_describe`` and ``mcp_resources``.

Each has one arguments definition (services/mcp_gateway/tool_schema.py). ``mcp_call``'s ``input``
is then checked against the called MCP tool's own input schema, as its server declared it in the
last catalog, the same way (``check_json``, the same ``invalid_arguments`` sentence naming the
field, ``input.path``) and before the gate asks or the call leaves: a call the server would refuse
costs no approval and no round trip. A tool the catalog does not know yet goes to the gateway, which
answers for it (the catalog may be a step old). The dispatcher turns ``AuxiliaryError`` into an
error result and a Degraded event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from services.kernel.tool_args import check_json
from services.loop.core.domain import call_deadline
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import ToolChunk
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level
from services.loop.tools.args import define
from services.loop.tools.local_tools import elicit_asker, unavailable
from services.mcp_gateway.tool_schema import (
    MCP_CALL_DESCRIPTION,
    MCP_CALL_NAME,
    MCP_DESCRIBE_DESCRIPTION,
    MCP_DESCRIBE_NAME,
    MCP_RESOURCES_DESCRIPTION,
    MCP_RESOURCES_NAME,
    McpCallArgs,
    McpDescribeArgs,
    McpResourcesArgs,
)

Schemas = Callable[[], dict[str, dict[str, Any]]]


async def _mcp_call(ctx: ToolContext, call: ToolCall, args: McpCallArgs) -> ToolOutcome:
    if ctx.mcp is None:
        return unavailable(call)
    emit = ctx.emit
    return await ctx.mcp.call(call.id, args.server, args.tool, json.dumps(args.input), call_deadline(ctx.remaining()),
                              lambda c: emit(ToolChunk(call_id=call.id, stream=c.stream, text=c.text)),
                              elicit_asker(ctx))


def input_checker(schemas: Schemas) -> Callable[[McpCallArgs], None]:
    """Check an ``mcp_call``'s ``input`` against the MCP tool's declared schema (if the catalog has it)."""

    def check(args: McpCallArgs) -> None:
        schema = schemas().get(f"{args.server}__{args.tool}")
        if schema:
            check_json(schema, args.input, "input")

    return check


def mcp_call_tool(schemas: Schemas) -> ToolDef:
    """``mcp_call``, its input checked against ``schemas()`` (the session's last catalog)."""
    return define(MCP_CALL_NAME, MCP_CALL_DESCRIPTION, McpCallArgs, _mcp_call, permission=Level.WARN, deferred=True,
                  refine=input_checker(schemas))


def mcp_describe_outcome(call_id: str, described: dict[str, str], args: McpDescribeArgs) -> ToolOutcome:
    """The ``mcp_describe`` answer from the last catalog: one tool's whole description and schema, or
    (no tool given) the server's tools, kept under ``server__``."""
    qualified = f"{args.server}__{args.tool or ''}"
    text = described.get(qualified)
    if text is None:
        what = f"MCP tool {qualified!r}" if args.tool else f"MCP server {args.server!r}"
        return ToolOutcome.error(call_id, MCP_DESCRIBE_NAME, ErrorCode.UNKNOWN_TOOL,
                                 f"no {what} is connected; use a server (and tool) name from the MCP catalog")
    return ToolOutcome(call_id, MCP_DESCRIBE_NAME, True, text)


def mcp_describe_tool(described: Callable[[], dict[str, str]]) -> ToolDef:
    """``mcp_describe``, answered from ``described()`` (the session's last catalog)."""

    async def handle(ctx: ToolContext, call: ToolCall, args: McpDescribeArgs) -> ToolOutcome:
        return mcp_describe_outcome(call.id, described(), args)

    return define(MCP_DESCRIBE_NAME, MCP_DESCRIBE_DESCRIPTION, McpDescribeArgs, handle, permission=Level.ALLOW,
                  deferred=True)


async def _mcp_resources(ctx: ToolContext, call: ToolCall, args: McpResourcesArgs) -> ToolOutcome:
    if ctx.mcp is None:
        return unavailable(call)
    if not args.server.strip():
        raise ValueError("`server` is empty; name the server")
    return await ctx.mcp.resources(call.id, args.server, args.uri or "", call_deadline(ctx.remaining()))


# Read-only, so the gate allows it; deferred and last among the loop's own tools.
MCP_RESOURCES = define(MCP_RESOURCES_NAME, MCP_RESOURCES_DESCRIPTION, McpResourcesArgs, _mcp_resources,
                       permission=Level.ALLOW, deferred=True)


def mcp_tools(schemas: Schemas, described: Callable[[], dict[str, str]]) -> list[ToolDef]:
    """The MCP tools of a session with an MCP gateway, reading its last catalog."""
    return [mcp_call_tool(schemas), mcp_describe_tool(described), MCP_RESOURCES]

