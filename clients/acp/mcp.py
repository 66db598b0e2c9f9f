"""The MCP servers an editor passes in ``session/new`` as ``mcp.servers[]`` entries for the gateway (pure).

ACP gives ``{name, command, args, env: [{name, value}]}`` for stdio and ``{type: "http" | "sse", name,
url, headers: [{name, value}]}`` for the others; the gateway takes our config's shape (``local`` with
a command list, ``remote`` with a transport). The servers are the user's own (their editor's
settings), so they join with the trust of a user's entry: tool calls still pass the permission gate.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def _pairs(value: Any) -> dict[str, str]:
    return {str(p["name"]): str(p.get("value", "")) for p in value or [] if isinstance(p, dict) and "name" in p}


def entry(server: Any) -> tuple[dict[str, Any], str]:
    """One ACP McpServer as our entry, or the sentence saying why it is left out."""
    if not isinstance(server, dict):
        return {}, "an MCP server must be an object"
    raw = str(server.get("name", ""))
    name = _BAD.sub("-", raw).strip("-")[:41]  # a session tag (7) follows: the gateway takes 48
    if not name:
        return {}, f"MCP server {raw!r} has no usable name"
    kind = server.get("type") or "stdio"
    if kind == "stdio":
        command = server.get("command")
        if not isinstance(command, str) or not command:
            return {}, f"MCP server {raw!r} has no command"
        out: dict[str, Any] = {"name": name, "type": "local",
                               "command": [command, *[str(a) for a in server.get("args") or []]]}
        if server.get("env"):
            out["environment"] = _pairs(server["env"])
        return out, ""
    if kind in ("http", "sse"):
        url = server.get("url")
        if not isinstance(url, str) or not url:
            return {}, f"MCP server {raw!r} has no url"
        out = {"name": name, "type": "remote", "url": url, "transport": "sse" if kind == "sse" else "streamable_http"}
        if server.get("headers"):
            out["headers"] = _pairs(server["headers"])
        return out, ""
    return {}, f"MCP server {raw!r}: transport {kind!r} is not stdio, http or sse"


def scoped_name(name: str, session_id: str) -> str:
    """The gateway's name of an editor's server for one session: the editor's name and a tag of the
    session (every session starts its own copy; a reload of the session finds the same name)."""
    return f"{name}-{hashlib.sha256(session_id.encode()).hexdigest()[:6]}" if session_id else name


def entries(servers: Sequence[Any], session_id: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """Every server that converts (named for ``session_id``), and a sentence for each one that does not."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for server in servers:
        converted, problem = entry(server)
        if problem:
            problems.append(problem)
        else:
            out.append({**converted, "name": scoped_name(converted["name"], session_id)})
    return out, problems
