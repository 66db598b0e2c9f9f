"""The MCP servers an editor brings to one ACP session, run in the gateway for that session alone.

They live while this process holds the session (the gateway's ``HoldSessionServers`` stream): a
``session/close`` or the end of stdin stops them here, and when this process dies (killed, crashed)
its socket closes and the gateway stops them by itself. A gateway that restarts under a live
adapter lost them: the hold notices the stream's end and brings them again. A later ``session/load``
in a new adapter brings them as ``session/new`` did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from clients.acp import mcp

SOURCE = "the editor (ai-coding acp)"
FIRST_EVENT_S = 10.0
"""How long the gateway may take to answer a hold."""
REJOIN_S = (0.5, 1.0, 2.0, 5.0)
"""Waits between attempts to bring the servers back after the gateway went away (the last repeats)."""


def _log(line: str) -> None:
    print(f"ai-coding acp: {line}", file=sys.stderr)


@dataclass
class EditorServers:
    """One session's editor servers in the gateway, and the hold that keeps them there."""

    setup: Any
    """The services' setup (``clients.cli.control.resolve``), for the gateway's endpoint."""
    session_id: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _call: Any = None
    _gateway: Any = None

    async def join(self, servers: list[Any]) -> list[str]:
        """Start ``servers`` (ACP ``McpServer`` objects) for the session; a sentence for each left out."""
        self.entries, problems = mcp.entries(servers, self.session_id)
        if not self.entries:
            return problems
        try:
            problems += await self._bring()
        except Exception as exc:  # the gateway cannot start or answer: the session goes on without them
            return [*problems, f"the editor's MCP servers were not started: {exc}"]
        self._task = asyncio.ensure_future(self._keep())
        return problems

    async def _bring(self) -> list[str]:
        """Hold the session, then add the servers (held first: none is ever unheld but for a moment)."""
        from clients.cli import control
        from clients.cli.connection.services import McpClient

        await asyncio.to_thread(control.ensure_running, self.setup, ["mcp_gateway"])
        gateway = McpClient(self.setup.endpoints["mcp_gateway"])
        call = gateway.hold(self.session_id, f"ai-coding acp pid {os.getpid()}")
        try:
            await asyncio.wait_for(call.read(), FIRST_EVENT_S)
            problems = []
            for entry in self.entries:
                refused = await gateway.add_for_run(json.dumps(entry), SOURCE, self.session_id)
                if refused:
                    problems.append(f"MCP server {entry['name']!r} left out: {refused}")
        except BaseException:
            call.cancel()
            await gateway.close()
            raise
        self._call, self._gateway = call, gateway
        return problems

    async def _keep(self) -> None:
        """Follow the hold; when the gateway goes away, bring the servers back once it answers again."""
        import grpc

        attempt = 0
        while True:
            with contextlib.suppress(grpc.RpcError):
                while self._call is not None and await self._call.read() is not grpc.aio.EOF:
                    attempt = 0
            await self._release()
            wait = REJOIN_S[min(attempt, len(REJOIN_S) - 1)]
            attempt += 1
            await asyncio.sleep(wait)
            try:
                for problem in await self._bring():
                    _log(problem)
                _log(f"the editor's MCP servers of {self.session_id} are back in the restarted gateway")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt == 1:
                    _log(f"the editor's MCP servers of {self.session_id} are gone with the gateway; "
                         f"bringing them back ({exc})")

    async def _release(self) -> None:
        call, gateway, self._call, self._gateway = self._call, self._gateway, None, None
        if call is not None:
            call.cancel()
        if gateway is not None:
            with contextlib.suppress(Exception):
                await gateway.close()

    async def leave(self) -> None:
        """Stop the servers now (``session/close``, the editor leaving); one log line when that fails."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        try:
            if self._gateway is not None:
                await self._gateway.drop_session(self.session_id)
        except Exception as exc:  # the editor is leaving: one line on its log, never a traceback
            _log(f"the editor's MCP servers of {self.session_id} were not stopped: {exc}")
        finally:
            await self._release()  # and the hold's end stops them anyway
