"""The two functions the model sees for every MCP tool (OpenAI function-calling shape).

Which tools exist is told by the catalog text in the system message (one compact line per
tool); ``mcp_describe`` returns one tool's full description and input schema (nested types
included) on demand, ``mcp_call`` calls it. Both schemas stay byte-identical between steps so
the prompt prefix cache holds. MCP calls are not parallel-safe (remote side effects are unknown).
"""

from __future__ import annotations

from typing import Any

MCP_CALL_NAME = "mcp_call"

MCP_CALL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": MCP_CALL_NAME,
        "description": (
            "Call a tool on a connected MCP server. The MCP tool catalog lists what exists as "
            "server__tool with its arguments; pass the server and the tool separately."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "Server name (the part before __)."},
                "tool": {"type": "string", "description": "Tool name on that server (the part after __)."},
                "input": {"type": "object", "description": "The tool's arguments as a JSON object."},
            },
            "required": ["server", "tool", "input"],
            "additionalProperties": False,
        },
    },
}

MCP_CALL_PARALLEL_SAFE = False

MCP_DESCRIBE_NAME = "mcp_describe"

MCP_DESCRIBE_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": MCP_DESCRIBE_NAME,
        "description": (
            "Show one MCP tool's full description and JSON input schema, or with only a server, that "
            "server's tools with their arguments and purpose (the catalog may only name them). Use it "
            "before mcp_call when the arguments are not in the catalog, nested or unclear."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "Server name (the part before __)."},
                "tool": {"type": "string",
                         "description": "Tool name on that server (the part after __); omit to list the server."},
            },
            "required": ["server"],
            "additionalProperties": False,
        },
    },
}


def server_key(server: str) -> str:
    """Where ``mcp_describe(server)``'s answer is kept among the per-tool ones (``server__tool``)."""
    return f"{server}__"


def describe_text(qualified_name: str, description: str, input_schema_json: str) -> str:
    """What ``mcp_describe`` answers for one tool: its name, whole description and input schema."""
    return f"{qualified_name}\n\n{description.strip() or '(no description)'}\n\ninput schema:\n{input_schema_json}"


MCP_RESOURCES_NAME = "mcp_resources"

MCP_RESOURCES_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": MCP_RESOURCES_NAME,
        "description": (
            "Read what an MCP server offers besides tools: without uri, list its resources and resource "
            "templates; with uri, read one (a template's URI with its {parts} filled in)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "Server name."},
                "uri": {"type": "string", "description": "The resource to read; omit to list them."},
            },
            "required": ["server"],
            "additionalProperties": False,
        },
    },
}
