"""Plain data the gateway passes between its parts (no protobuf, no SDK types)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from services.mcp_gateway.catalog import ToolEntry
from services.mcp_gateway.elicitation import ElicitReply
from services.mcp_gateway.settings import ServerSettings


class State(Enum):
    """Lifecycle of one server (mirrors the proto's ServerState)."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    NEEDS_AUTH = "needs_auth"
    DISABLED = "disabled"


@dataclass(frozen=True)
class LogLine:
    """One line a server logged: an MCP log message, or (level ``stderr``) a local server's stderr."""

    level: str
    logger: str
    text: str


@dataclass(frozen=True)
class ServerView:
    """A snapshot of one server for ListServers and the client's /mcp panel."""

    name: str
    type: str
    state: State
    reason: str = ""
    tool_count: int = 0
    attempts: int = 0
    next_retry_in_s: float = 0.0
    auto_approve: bool = False
    degraded: bool = False
    """True once the server has failed at least once since the gateway started (sticky)."""
    degraded_reason: str = ""
    """Why it first failed: the loop emits one Degraded event per server with this text."""
    log: tuple[LogLine, ...] = ()
    """Its newest kept log lines, oldest first (only when asked for)."""
    session_id: str = ""
    """Non-empty: it belongs to this loop session alone (an editor's), not to the user's config."""


@dataclass(frozen=True)
class Progress:
    """One progress notification from a server during a call."""

    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True)
class CallOutcome:
    """What one call produced, as the model will see it."""

    ok: bool
    output: str
    data: Mapping[str, Any] = field(default_factory=dict)
    error_code: str = ""
    error_message: str = ""
    hint: str = ""
    limit_hit: str = ""
    duration_ms: float = 0.0


ProgressSink = Callable[[Progress], Awaitable[None]]
ElicitHandler = Callable[[str, str, Mapping[str, Any], str], Awaitable[ElicitReply]]
"""(message, mode "form"/"url", requested schema, url) -> the user's reply, for one server's session."""


class McpSession(Protocol):
    """An open connection to one server (adapter over the SDK's client)."""

    async def list_tools(self) -> list[ToolEntry]: ...

    async def call_tool(self, tool: str, arguments: dict[str, Any], on_progress: ProgressSink) -> CallOutcome: ...

    async def list_resources(self) -> CallOutcome:
        """``resources/list`` and ``resources/templates/list`` (all pages) as readable lines;
        ``data.resources`` and ``data.templates`` list them."""
        ...

    async def read_resource(self, uri: str) -> CallOutcome: ...

    async def list_prompts(self) -> CallOutcome:
        """``prompts/list`` (all pages) as readable lines; ``data.prompts`` lists them."""
        ...

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> CallOutcome:
        """The prompt's messages as ``role: text`` blocks; ``data.messages`` holds them."""
        ...

    async def complete_prompt(self, prompt: str, argument: str, value: str, context: dict[str, str]) -> CallOutcome:
        """``completion/complete`` for one prompt argument; ``data.values`` holds the suggestions."""
        ...


class SessionOpener(Protocol):
    """Opens a session; entering and leaving must happen in the same task."""

    def __call__(self, settings: ServerSettings) -> AbstractAsyncContextManager[McpSession]: ...


StatusListener = Callable[[ServerView], None]

__all__ = ["AsyncIterator", "CallOutcome", "McpSession", "Progress", "ServerView", "SessionOpener", "State"]
