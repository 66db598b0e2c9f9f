"""What the adapter keeps per ACP session (the loop keeps the conversation itself)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clients.acp.editor_mcp import EditorServers
    from clients.cli.connection.loop import TurnStream
    from clients.cli.views import Usage


@dataclass
class Session:
    """An ACP session this process serves: a loop session, and the turn it runs now."""

    id: str
    workspace: str
    cwd: str
    stream: TurnStream | None = None
    cancelled: bool = False
    denied_tools: set[str] = field(default_factory=set)
    """Tools the editor answered "reject always" for: refused here without asking again."""
    asks: set[asyncio.Task[None]] = field(default_factory=set)
    last_usage: Usage | None = None
    """The last finished turn's usage (``/cost``)."""
    mcp_servers: EditorServers | None = None
    """The editor's MCP servers, run in the gateway for this session alone while this process holds it."""
