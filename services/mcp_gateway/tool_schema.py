"""The two functions the model sees for every MCP tool (OpenAI function-calling shape).

Which tools exist is told by the catalog text in the system message (one compact line per
tool); ``mcp_describe`` returns one tool's full description and input schema (nested types
included) on demand, ``mcp_call`` calls it. Both schemas stay byte-identical between steps so
the prompt prefix cache holds. MCP calls are not parallel-safe (remote side effects are unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.kernel.tool_args import arg, schema_of

MCP_CALL_NAME = "mcp_call"
MCP_DESCRIBE_NAME = "mcp_describe"
MCP_RESOURCES_NAME = "mcp_resources"
MCP_CALL_PARALLEL_SAFE = False

_SERVER = "Server name (the part before __)."


@dataclass(frozen=True)
class McpCallArgs:
    """``mcp_call``'s arguments; ``input`` is then checked against the MCP tool's own input schema."""

    server: str = arg(_SERVER)
    tool: str = arg("Tool name on that server (the part after __).")
    input: dict[str, Any] = arg("The tool's arguments as a JSON object.")


@dataclass(frozen=True)
class McpDescribeArgs:
    """``mcp_describe``'s arguments."""

    server: str = arg(_SERVER)
    tool: str | None = arg("Tool name on that server (the part after __); omit to list the server.", None)


@dataclass(frozen=True)
class McpResourcesArgs:
    """``mcp_resources``'s arguments."""

    server: str = arg("Server name.")
    uri: str | None = arg("The resource to read; omit to list them.", None)


MCP_CALL_DESCRIPTION = ("Call a tool on a connected MCP server. The MCP tool catalog lists what exists as "
                        "server__tool with its arguments; pass the server and the tool separately.")
MCP_DESCRIBE_DESCRIPTION = (
    "Show one MCP tool's full description and JSON input schema, or with only a server, that "
    "server's tools with their arguments and purpose (the catalog may only name them). Use it "
    "before mcp_call when the arguments are not in the catalog, nested or unclear.")
MCP_RESOURCES_DESCRIPTION = (
    "Read what an MCP server offers besides tools: without uri, list its resources and resource "
    "templates; with uri, read one (a template's URI with its {parts} filled in).")


def _function(name: str, description: str, args: type[Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema_of(args)}}


MCP_CALL_SCHEMA = _function(MCP_CALL_NAME, MCP_CALL_DESCRIPTION, McpCallArgs)
MCP_DESCRIBE_SCHEMA = _function(MCP_DESCRIBE_NAME, MCP_DESCRIBE_DESCRIPTION, McpDescribeArgs)
MCP_RESOURCES_SCHEMA = _function(MCP_RESOURCES_NAME, MCP_RESOURCES_DESCRIPTION, McpResourcesArgs)


def server_key(server: str) -> str:
    """Where ``mcp_describe(server)``'s answer is kept among the per-tool ones (``server__tool``)."""
    return f"{server}__"


def describe_text(qualified_name: str, description: str, input_schema_json: str) -> str:
    """What ``mcp_describe`` answers for one tool: its name, whole description and input schema."""
    return f"{qualified_name}\n\n{description.strip() or '(no description)'}\n\ninput schema:\n{input_schema_json}"
