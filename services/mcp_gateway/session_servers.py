"""Servers that belong to one loop session (an editor's, from ACP ``session/new``), and how long they live.

Such a server lives while the client that brought it holds its session (the ``HoldSessionServers``
stream of ``ai-coding acp``). A client that exits, crashes or is killed closes its socket; gRPC
ends the stream, and when a session's last hold ends its servers are stopped and forgotten. A server
added for a session nobody holds is stopped once ``grace_s`` passes without a hold (a client killed
between adding and holding), so no path leaves an editor's server running until the gateway stops.
A later client that brings them again (a ``session/load``) adds them anew.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger("ai_coding.mcp_gateway")

HOLD_GRACE_S = 30.0
"""How long a session's servers wait for a hold before they are stopped."""

Drop = Callable[[str], Awaitable[list[str]]]
"""Stops and forgets the servers of one session; their names."""


@dataclass
class SessionServers:
    """Which server belongs to which session, and who holds each session."""

    drop: Drop
    grace_s: float = HOLD_GRACE_S
    owners: dict[str, str] = field(default_factory=dict)
    """Server name -> the session it belongs to."""
    holds: dict[str, int] = field(default_factory=dict)
    """Session -> how many clients hold it now."""
    _timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    _drops: set[asyncio.Task[list[str]]] = field(default_factory=set)

    def owner(self, server: str) -> str:
        return self.owners.get(server, "")

    def names(self, session_id: str) -> list[str]:
        return [name for name, owner in self.owners.items() if owner == session_id]

    def added(self, server: str, session_id: str) -> None:
        """``server`` now belongs to ``session_id``; unheld, it waits ``grace_s`` for a hold."""
        self.owners[server] = session_id
        if not self.holds.get(session_id):
            self._arm(session_id)

    def forget(self, session_id: str) -> list[str]:
        """The session's servers leave the table (the caller stops them); their names."""
        self._disarm(session_id)
        names = self.names(session_id)
        for name in names:
            del self.owners[name]
        return names

    def hold(self, session_id: str) -> None:
        self.holds[session_id] = self.holds.get(session_id, 0) + 1
        self._disarm(session_id)

    def release(self, session_id: str) -> None:
        """One hold ended; the last one stops the session's servers (scheduled: callers may be cancelled)."""
        left = self.holds.get(session_id, 0) - 1
        if left > 0:
            self.holds[session_id] = left
            return
        self.holds.pop(session_id, None)
        if self.names(session_id):
            self._start_drop(session_id, "its client is gone")

    def _arm(self, session_id: str) -> None:
        if session_id not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[session_id] = loop.call_later(self.grace_s, self._expire, session_id)

    def _disarm(self, session_id: str) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()

    def _expire(self, session_id: str) -> None:
        self._timers.pop(session_id, None)
        if not self.holds.get(session_id) and self.names(session_id):
            self._start_drop(session_id, f"no client held the session within {self.grace_s:g} s")

    def _start_drop(self, session_id: str, why: str) -> None:
        log.info("stopping the MCP servers of session %s (%s): %s", session_id, why,
                 ", ".join(self.names(session_id)))
        task = asyncio.ensure_future(self.drop(session_id))
        self._drops.add(task)
        task.add_done_callback(self._drops.discard)

    async def settle(self) -> None:
        """Wait for the drops under way (the gateway's close, tests)."""
        if self._drops:
            await asyncio.gather(*self._drops, return_exceptions=True)

    def close(self) -> None:
        for session_id in list(self._timers):
            self._disarm(session_id)
