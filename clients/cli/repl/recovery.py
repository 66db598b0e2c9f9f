"""Bringing back the services an open REPL lost (its supervisor or its loop was killed).

``run`` starts the services when they are down (``control.ensure_running``); the REPL does the
same the moment a call finds the loop not answering, instead of retrying a dead endpoint for
half a minute. One restore runs at a time; callers that come meanwhile wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clients.cli.control import Setup
    from clients.cli.driver import TurnEnd

OFFERED = "the loop stopped mid-turn; it is running again and your prompt is back on the input line (Enter sends it)"


# The reason a loop gives the turns it ends because it is shutting down (SIGTERM: the supervisor died).
SERVICE_STOPPING = "service_stopping"


def lost_turn(end: TurnEnd) -> bool:
    """The turn was lost to its service, not ended by the work: the loop died mid-stream, or it
    stopped the turn because it was shutting down."""
    if end.error is not None:
        return end.error.reason == "service_unavailable"
    return end.finished is not None and end.finished.reason == SERVICE_STOPPING


def needed_services(setup: Setup) -> list[str]:
    """The services the REPL needs serving: the loop (and the tools, when this host runs them)."""
    return [name for name in ("loop", "tools") if name in setup.supervisor.services] or ["loop"]


class ServiceRestorer:
    """Restarts what the REPL of ``workspace`` needs; says so in dim notes, once per outage."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self._lock = asyncio.Lock()

    async def restore(self, note: Callable[[str], None]) -> str:
        """"" once the services serve again (started by us when nothing runs), else the one-line reason."""
        async with self._lock:
            if not await asyncio.to_thread(self._missing):
                return ""
            note("the loop service is not answering; starting the services again…")
            problem = await asyncio.to_thread(self._ensure)
            if not problem:
                note("services are back")
            return problem

    def _missing(self) -> bool:
        from clients.cli import control

        setup = control.resolve(Path(self.workspace))
        return bool(control.wait_serving(setup, needed_services(setup), timeout=0.0))

    def _ensure(self) -> str:
        from clients.cli import control
        from services.kernel.errors import AiCodingError

        try:
            setup = control.resolve(Path(self.workspace))
            control.ensure_running(setup, needed_services(setup), quiet=True)
        except AiCodingError as err:
            return str(err)
        return ""
