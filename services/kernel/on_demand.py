"""Services started on demand: what the supervisor, the service and their clients agree on.

With ``supervisor.on_demand`` (memory and the MCP gateway by default), the supervisor does not start
such a service with the others: it listens on the service's Unix socket itself, and the first
connection that arrives starts the service (socket activation). The service then takes the socket
path over (:data:`TAKE_OVER_ENV` names the supervisor's socket, the only one it may replace), the
supervisor closes its own listener, and a client whose connection waited there reconnects to the
service. A service started so stops by itself after :data:`IDLE_ENV` seconds with no call in flight
and none finished in that time (health checks and reflection do not count), unless it says it is
busy (the gateway while it has an MCP server); it exits with :data:`IDLE_EXIT_CODE` and the
supervisor listens again.

While the supervisor listens for a service, a marker file beside the socket (:func:`marker_path`)
holds its listener's identity, so a client can tell "not running, starts when asked" from "running"
without connecting (a connection would start it): the loop uses it to leave the gateway alone when
no MCP server exists (services/loop/adapters/mcp.py). Stdlib only: the supervisor imports this.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ALLOWED = ("memory", "mcp_gateway")
"""Services that may run on demand. Not the loop (every client talks to it first) nor the tools
service (it holds each session's read snapshots and background jobs between calls)."""

IDLE_EXIT_CODE = 75
"""Exit status of a service that stopped because it was idle (EX_TEMPFAIL: "try again later"); the
supervisor listens for it again instead of counting a crash."""

ON_DEMAND_ENV = "AI_CODING_ON_DEMAND"
"""Comma-separated services the supervisor runs on demand; set for every service it starts, so a
client among them (the loop) knows whose start is worth waiting for."""
IDLE_ENV = "AI_CODING_IDLE_EXIT_SECONDS"
"""Seconds without a call after which a service started on demand stops (absent or 0: never)."""
TAKE_OVER_ENV = "AI_CODING_TAKE_OVER_SOCKET"
""":func:`socket_identity` of the supervisor's listening socket, which the service started on demand replaces."""

START_WAIT_SECONDS = 15.0
"""How long a client waits for a service on demand to start before its call counts as failed: the
time to SERVING of a service on a loaded two-core machine (~0.3 s idle, several seconds at load 10)."""


def socket_identity(path: str | os.PathLike[str]) -> str | None:
    """``DEV:INODE:CTIME`` of what ``path`` names now, or None when nothing does (the change time
    tells a new socket from an old one whose freed inode number it got)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}"


def marker_path(socket_path: str | os.PathLike[str]) -> Path:
    """The file that says the supervisor, not the service, listens on ``socket_path``."""
    return Path(f"{os.fspath(socket_path)}.on-demand")


def waiting(socket_path: str | os.PathLike[str]) -> bool:
    """True when the service of ``socket_path`` is not running and its first connection will start
    it: the supervisor's marker names the socket that is there now."""
    try:
        recorded = marker_path(socket_path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded == socket_identity(socket_path)


def names_from(env: Mapping[str, str]) -> frozenset[str]:
    """The services :data:`ON_DEMAND_ENV` names."""
    return frozenset(n for n in (p.strip() for p in env.get(ON_DEMAND_ENV, "").split(",")) if n)


def idle_seconds_from(env: Mapping[str, str]) -> float:
    """:data:`IDLE_ENV` as seconds; 0 (never stop) when unset or not a positive number."""
    try:
        value = float(env.get(IDLE_ENV, "") or 0)
    except ValueError:
        return 0.0
    return value if value > 0 and value == value and value != float("inf") else 0.0


class CallActivity:
    """Calls in flight and when the last one ended (the server's interceptor counts them)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.in_flight = 0
        self.last_end = clock()

    def begin(self) -> None:
        self.in_flight += 1

    def end(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self.last_end = self._clock()

    def quiet_for(self) -> float:
        """Seconds since the last call ended, 0 while one runs."""
        return 0.0 if self.in_flight else self._clock() - self.last_end


def idle_due(quiet_for: float, idle_seconds: float, busy: bool) -> bool:
    """Whether a service on demand should stop now: nothing asked of it for ``idle_seconds`` and it
    holds nothing that would be lost (``busy``)."""
    return idle_seconds > 0 and not busy and quiet_for >= idle_seconds


def remove_marker(socket_path: str | os.PathLike[str]) -> None:
    with contextlib.suppress(FileNotFoundError):
        marker_path(socket_path).unlink()
