"""The ``initialize`` answer, stdlib only: it is sent before the rest of the adapter is imported.

Capabilities say only what the adapter really does (docs/editors.md says each): sessions load,
list, resume and close; prompts take text, embedded resources (an editor's buffer) and images;
the editor's MCP servers (stdio, HTTP, SSE) run in the gateway for their session alone.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = 1


def capabilities(version: str) -> dict[str, Any]:
    """The InitializeResponse."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
        },
        "agentInfo": {"name": "ai-coding", "title": "ai-coding", "version": version},
        "authMethods": [],
    }
