"""The ``loop`` config section, apart from the service's main so a client can read it cheaply (a
cold ``ai-coding run`` asks it which services started on demand the turn will use at once)."""

from __future__ import annotations

from dataclasses import dataclass

from services.loop.policy.settings import DEFAULT_WINDOW


@dataclass
class LoopConfig:
    """Config section ``loop``."""

    memory: bool = True
    """Offer memory_search / memory_write through the memory service."""
    mcp: bool = True
    """Offer mcp_call through the MCP gateway."""
    traces: bool = True
    """Write turn traces under .ai-coding/traces/."""
    harvest: bool = True
    """After each turn, extract durable notes with one model call and send them to memory
    (runs in the background with its own budget; never delays or fails the turn). Set false to
    skip the extra model call; ``memory.extraction_enabled: false`` also stops it."""
    harvest_timeout_seconds: float = 60.0
    """Budget of one harvest (model call + reconcile)."""
    event_window: int = DEFAULT_WINDOW
    """Events kept in memory per session for clients that re-attach (default 20000, ~200 B each);
    a client re-attaching from an older number is told how many it missed."""
