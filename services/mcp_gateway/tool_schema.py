"""The one function the model sees for every MCP tool (OpenAI function-calling shape).

Which tools exist is told by the catalog text in the volatile tail; this schema
stays byte-identical between steps so the prompt prefix cache holds.
MCP calls are not parallel-safe (remote side effects are unknown).
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
