"""Small pure decisions of the supervisor."""

from __future__ import annotations

BACKOFF_FIRST_S = 1.0
BACKOFF_CAP_S = 60.0
MAX_CONCURRENT_CONNECTS = 4
"""At most this many servers connect at once (ten cold `npx` starts together swamp a laptop)."""


def backoff_delay(failures: int) -> float:
    """Seconds before retry number ``failures`` (1 s doubling, capped at 60 s); 0 before any failure."""
    if failures <= 0:
        return 0.0
    return min(BACKOFF_CAP_S, BACKOFF_FIRST_S * float(2 ** (failures - 1)))


def call_timeout_s(requested_s: float, execution_ms: int) -> float:
    """The effective limit of one call: the server's execution limit, or less if the caller asks."""
    limit = execution_ms / 1000.0
    return min(requested_s, limit) if requested_s > 0 else limit


def deadline_key(server: str, key: str, ms: int) -> str:
    """Which setting a deadline came from, as a reason names it: the key, its value and the server."""
    return f"`timeout.{key}: {ms}` of MCP server {server!r}"


def call_deadline_source(server: str, requested_s: float, execution_ms: int) -> str:
    """What set the limit :func:`call_timeout_s` chose: the server's ``timeout.execution``, or the caller."""
    if requested_s > 0 and requested_s < execution_ms / 1000.0:
        return f"the caller's limit; the server's is {deadline_key(server, 'execution', execution_ms)}"
    return deadline_key(server, "execution", execution_ms)


def qualified_tool(server: str, tool: str) -> str:
    """Accept ``tool`` or ``server__tool`` and return the bare remote name."""
    prefix = f"{server}__"
    return tool[len(prefix) :] if tool.startswith(prefix) else tool
