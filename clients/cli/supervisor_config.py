"""The ``supervisor`` config section and the services a supervisor may run.

Apart from :mod:`clients.cli.supervisor` (which runs the services) so that a command that only
asks whether they serve (``ai-coding run``) does not import the process manager (ctypes,
logging, the restart machinery).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from services.kernel.on_demand import ALLOWED

ALL_SERVICES = ["loop", "tools", "memory", "mcp_gateway"]


@dataclass
class SupervisorConfig:
    """The ``supervisor`` section of the config (user layer)."""

    services: list[str] = field(default_factory=lambda: list(ALL_SERVICES))
    """Services this machine runs; leave one out when it runs elsewhere (e.g. a remote tool host)."""
    grace_seconds: float = 8.0
    """How long a service gets to stop after SIGTERM before it and its children are killed."""
    backoff_initial_seconds: float = 1.0
    """Delay before the first restart of a crashed service; doubles on each crash in a row."""
    backoff_max_seconds: float = 30.0
    """Upper bound of the restart delay."""
    stable_seconds: float = 60.0
    """A service that stayed up this long counts as healthy: its next crash starts the series again."""
    idle_seconds: float = 900.0
    """Stop everything after this long with no client, running turn, background child or running
    command (0 = never; ``ai-coding up --stay`` also keeps them). bench/idle.py measures what a cold
    start costs instead (about 2 s here): 15 minutes pays it at most once per quarter hour of pause."""
    on_demand: list[str] = field(default_factory=lambda: list(ALLOWED))
    """Services started by the first call that needs them instead of with the others (memory and
    mcp_gateway, the only two allowed): until then the supervisor listens on their socket, and each
    stops again after ``on_demand_idle_seconds`` without a call. A session that uses memory starts
    it when it opens; the gateway starts once an MCP server is configured or a command asks for it.
    Only for services on a Unix socket; ``[]`` starts every service with ``ai-coding up``.
    bench/footprint.py: idle, the two hold ~90 MB of the ~210 MB the five processes hold."""
    on_demand_idle_seconds: float = 300.0
    """An on-demand service stops after this long with no call in flight or finished (health checks
    do not count; the gateway never while it has an MCP server). 0 = it runs until ``down`` once
    started. Its next start costs ~0.3 s, paid by the call that needs it."""


def on_demand_services(config: SupervisorConfig, endpoints: Mapping[str, str]) -> list[str]:
    """The services this supervisor starts on demand: those of ``config.on_demand`` it runs here, on
    a Unix socket (``endpoints``: name -> ``unix:///path`` or ``tcp://...``)."""
    return [name for name in config.on_demand
            if name in ALLOWED and name in config.services and str(endpoints.get(name, "")).startswith("unix://")]
