"""The gateway's core: every configured server's supervisor, the catalog, calls.

No gRPC here (the servicer adapts); no SDK here (the opener adapts).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from services.kernel.config import read_yaml_file
from services.kernel.errors import ConfigError
from services.mcp_gateway.catalog import ToolEntry, render_catalog
from services.mcp_gateway.domain import (
    CallOutcome,
    McpSession,
    ProgressSink,
    ServerView,
    SessionOpener,
    State,
)
from services.mcp_gateway.elicitation import ElicitationBroker, ElicitSink
from services.mcp_gateway.errors import ServerConfigError, UnknownServer
from services.mcp_gateway.policy import MAX_CONCURRENT_CONNECTS, qualified_tool
from services.mcp_gateway.session_servers import SessionServers
from services.mcp_gateway.settings import (
    SIDECAR_NAME,
    McpSettings,
    ServerSettings,
    append_to_sidecar,
    parse_server,
    parse_servers,
)
from services.mcp_gateway.sidecar_watch import RESTART_LINE, file_stamp, sidecar_delta
from services.mcp_gateway.supervisor import ServerSupervisor

log = logging.getLogger("ai_coding.mcp_gateway")


class Gateway:
    """All MCP servers of one user, each supervised on its own."""

    def __init__(self, settings: McpSettings, opener: SessionOpener, sidecar: Path) -> None:
        self._opener = opener
        self._sidecar = sidecar
        self._limiter = asyncio.Semaphore(MAX_CONCURRENT_CONNECTS)
        self.supervisors: dict[str, ServerSupervisor] = {}
        self.elicitations = ElicitationBroker()
        """Servers' questions to the user, routed to the call running on that server."""
        self._invalid = {bad.name: bad.reason for bad in settings.invalid}
        for server in settings.servers:
            self.supervisors[server.name] = self._make(server)
        self._started = False
        self._sidecar_stamp = file_stamp(sidecar)
        self._stale: dict[str, str] = {}
        """Sidecar servers edited by hand since the start: name -> the line that says to restart."""
        self.sessions = SessionServers(self._drop_unheld)
        """Servers added for one loop session (an editor's): whose they are, who holds them."""

    def _make(self, server: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(server, self._opener, self._limiter)

    def busy(self) -> bool:
        """Whether a stop for idleness would lose something: a server (configured, added, an editor's,
        connected or not: its process, its session, a login under way) or a session held."""
        return bool(self.supervisors) or any(self.sessions.holds.values())

    async def start(self) -> None:
        """Start every owner task; never waits for a connection."""
        self._started = True
        for sup in self.supervisors.values():
            sup.start()

    async def aclose(self) -> None:
        """Close every session; safe to call twice or before start."""
        self.elicitations.cancel_all()
        self.sessions.close()
        await self.sessions.settle()
        await asyncio.gather(*(s.aclose() for s in self.supervisors.values()), return_exceptions=True)

    def refresh_sidecar(self) -> None:
        """Pick up a hand-edited sidecar (a ``stat`` per call; read only when it changed)."""
        stamp = file_stamp(self._sidecar)
        if stamp == self._sidecar_stamp:
            return
        self._sidecar_stamp = stamp
        try:
            data = read_yaml_file(self._sidecar) if self._sidecar.is_file() else {}
        except ConfigError as exc:
            self._invalid[SIDECAR_NAME] = str(exc)
            return
        self._invalid.pop(SIDECAR_NAME, None)
        good, bad = parse_servers(data.get("servers"), str(self._sidecar))
        mine = {n: s.settings for n, s in self.supervisors.items() if s.settings.source == str(self._sidecar)}
        delta = sidecar_delta(mine, good, set(self.supervisors))
        for server in delta.added:
            log.info("mcp.local.yaml: added server %s", server.name)
            self.supervisors[server.name] = sup = self._make(server)
            if self._started:
                sup.start()
        self._stale = {name: RESTART_LINE for name in delta.stale}
        for invalid in bad:
            self._invalid[invalid.name] = invalid.reason

    def servers(self, log_lines: int = 0) -> list[ServerView]:
        """Each server's state, invalid entries included (as failed); a hand-edited sidecar is read first.
        With ``log_lines``, each view carries that many of the server's newest kept log lines."""
        self.refresh_sidecar()
        views = [replace(v, degraded=True, degraded_reason=self._stale[v.name])
                 if v.name in self._stale else v for v in (s.view(log_lines) for s in self.supervisors.values())]
        views = [replace(v, session_id=self.sessions.owner(v.name)) if self.sessions.owner(v.name) else v
                 for v in views]
        for name, reason in self._invalid.items():
            views.append(ServerView(name=name, type="?", state=State.FAILED, reason=reason, degraded=True,
                                    degraded_reason=reason))
        return views

    def supervisor(self, name: str) -> ServerSupervisor:
        """The supervisor of ``name`` or :class:`UnknownServer`."""
        sup = self.supervisors.get(name)
        if sup is None:
            known = ", ".join(sorted(self.supervisors)) or "none configured"
            raise UnknownServer(f"no MCP server named {name!r}", hint=f"Known servers: {known}.")
        return sup

    def visible(self, server: str, session_id: str) -> bool:
        """``server`` belongs to no session, or to ``session_id``."""
        owner = self.sessions.owner(server)
        return not owner or owner == session_id

    def _seen(self, session_id: str) -> list[ServerSupervisor]:
        return [sup for name, sup in self.supervisors.items() if self.visible(name, session_id)]

    def entries(self, session_id: str = "") -> list[ToolEntry]:
        """Tools of every connected server ``session_id`` sees (whitelists applied), in config order."""
        self.refresh_sidecar()
        out: list[ToolEntry] = []
        for sup in self._seen(session_id):
            if sup.state == State.CONNECTED:
                out.extend(sup.tools)
        return out

    def catalog(self, session_id: str = "") -> tuple[str, list[ToolEntry]]:
        """The budgeted catalog text and the entries it shows."""
        notes = {sup.settings.name: sup.instructions for sup in self._seen(session_id)
                 if sup.state == State.CONNECTED and sup.instructions}
        return render_catalog(self.entries(session_id), instructions=notes)

    async def call(self, server: str, tool: str, input_json: str, timeout_s: float,
                   on_progress: ProgressSink, on_elicit: ElicitSink | None = None, session_id: str = "") -> CallOutcome:
        """Run one remote tool; every failure comes back as an outcome the model can read.
        ``on_elicit`` receives the questions the server asks the user during the call."""
        sup = self.supervisors.get(server) if self.visible(server, session_id) else None
        if sup is None:
            return unknown_server(server, [s.settings.name for s in self._seen(session_id)])
        arguments, problem = parse_arguments(input_json)
        if problem:
            return CallOutcome(False, problem, error_code="invalid_arguments", error_message=problem,
                               hint="Pass `input` as a JSON object of the tool's arguments.")
        with self.elicitations.call(server, on_elicit):
            return await sup.call(qualified_tool(server, tool), arguments, timeout_s, on_progress,
                                  lambda: self.elicitations.user_seconds(server))

    async def resources(self, server: str, timeout_s: float, session_id: str = "") -> CallOutcome:
        """The resources ``server`` lists."""
        return await self._use(server, "resources/list", lambda session: session.list_resources(), timeout_s,
                               session_id)

    async def read_resource(self, server: str, uri: str, timeout_s: float, session_id: str = "") -> CallOutcome:
        """One resource of ``server``."""
        return await self._use(server, f"reading {uri}", lambda session: session.read_resource(uri), timeout_s,
                               session_id)

    async def prompts(self, server: str, timeout_s: float) -> CallOutcome:
        """The prompts ``server`` lists."""
        return await self._use(server, "prompts/list", lambda session: session.list_prompts(), timeout_s)

    async def prompt(self, server: str, name: str, arguments_json: str, timeout_s: float) -> CallOutcome:
        """One prompt of ``server``, filled with ``arguments_json`` (a JSON object of strings)."""
        arguments, problem = parse_arguments(arguments_json)
        if problem:
            return CallOutcome(False, problem.replace("tool input", "prompt arguments"), error_code="invalid_arguments",
                               error_message=problem, hint="Pass the arguments as a JSON object of strings.")
        values = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
        return await self._use(server, f"prompt {name}", lambda session: session.get_prompt(name, values), timeout_s)

    async def complete_prompt(self, server: str, prompt: str, argument: str, value: str, context_json: str,
                              timeout_s: float) -> CallOutcome:
        """Suggested values for one argument of a prompt of ``server``."""
        context, problem = parse_arguments(context_json or "{}")
        if problem:
            return CallOutcome(False, problem.replace("tool input", "completion context"),
                               error_code="invalid_arguments", error_message=problem,
                               hint="Pass the other arguments as a JSON object of strings.")
        values = {str(k): str(v) for k, v in context.items()}
        return await self._use(server, f"completion of {prompt}",
                               lambda session: session.complete_prompt(prompt, argument, value, values), timeout_s)

    async def _use(self, server: str, what: str, run: Callable[[McpSession], Awaitable[CallOutcome]],
                   timeout_s: float, session_id: str = "") -> CallOutcome:
        sup = self.supervisors.get(server) if self.visible(server, session_id) else None
        if sup is None:
            return unknown_server(server, [s.settings.name for s in self._seen(session_id)])
        return await sup.use(f"{what} on {server!r}", run, timeout_s)

    def reconnect(self, name: str) -> ServerView:
        """Retry ``name`` now."""
        sup = self.supervisor(name)
        sup.reconnect_now()
        return sup.view()

    async def add_server(self, entry: Mapping[str, Any], project_source: str = "", session_id: str = "") -> ServerView:
        """Validate, persist to the sidecar, and start connecting (never replaces an existing name).
        A project's server (``project_source``: its file) is kept for this run only, not persisted;
        with ``session_id`` too it belongs to that loop session alone, while a client holds the session
        (:class:`~services.mcp_gateway.session_servers.SessionServers`; :meth:`drop_session` ends it)."""
        server = parse_server(dict(entry), project_source or str(self._sidecar))
        if server.name in self.supervisors:
            raise ServerConfigError(f"an MCP server named {server.name!r} already exists",
                                    hint="Pick another name; edit the config file to change an existing one.")
        if not project_source:
            self.refresh_sidecar()  # a hand edit made before this one is read first
            append_to_sidecar(self._sidecar, entry)
            self._sidecar_stamp = file_stamp(self._sidecar)  # our own write is not a hand edit
        sup = self._make(server)
        self.supervisors[server.name] = sup
        if project_source and session_id:
            self.sessions.added(server.name, session_id)
        if self._started:
            sup.start()
        return sup.view()

    async def drop_session(self, session_id: str) -> list[str]:
        """Stop and forget the servers added for ``session_id``; their names."""
        names = self.sessions.forget(session_id)
        leaving = [self.supervisors.pop(name) for name in names]  # gone at once: a new add starts afresh
        await asyncio.gather(*(sup.aclose() for sup in leaving), return_exceptions=True)
        return names

    async def _drop_unheld(self, session_id: str) -> list[str]:
        """The session's last hold ended (or none came): its servers stop, unless a client held it again."""
        if self.sessions.holds.get(session_id):
            return []
        return await self.drop_session(session_id)


def unknown_server(server: str, known: list[str]) -> CallOutcome:
    """The outcome for a request naming a server that is not configured."""
    return CallOutcome(False, f"no MCP server named {server!r}", error_code="mcp_unknown_server",
                       error_message=f"unknown server {server!r}", hint=f"Known servers: {', '.join(sorted(known)) or 'none'}.")


def parse_arguments(text: str) -> tuple[dict[str, Any], str]:
    """The call's arguments as a dict, or a readable problem."""
    if not text.strip():
        return {}, ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"the tool input is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if not isinstance(value, dict):
        return {}, f"the tool input must be a JSON object, not {type(value).__name__}"
    return value, ""
