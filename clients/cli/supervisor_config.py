"""The ``supervisor`` config section and the services a supervisor may run.

Apart from :mod:`clients.cli.supervisor` (which runs the services) so that a command that only
asks whether they serve (``ai-coding run``) does not import the process manager (ctypes,
logging, the restart machinery).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
