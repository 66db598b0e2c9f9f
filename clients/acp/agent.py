"""The ACP methods, answered through the loop's typed contracts (OpenSession, ListSessions,
GetSession, RunCommand and the Converse stream of :class:`clients.cli.connection.loop.LoopClient`).

The loop, grpc and the CLI's connection layer are imported on the first session call, not at
``initialize``: an editor's agent panel gets its answer while grpc is still loading.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clients.acp import history, mapping, prompt
from clients.acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    Connection,
    PeerGone,
    RpcError,
)
from clients.acp.state import Session
from clients.cli import views

if TYPE_CHECKING:
    from clients.cli.connection.loop import LoopClient


def _error(err: Exception, what: str) -> RpcError:
    """A loop failure as the protocol's error: a session the loop does not know is "resource not found"."""
    status = str(getattr(err, "status", ""))
    if status == "not_found":
        return RpcError(RESOURCE_NOT_FOUND, f"{what}: {getattr(err, 'detail', '') or err}")
    if status in ("invalid_argument", "failed_precondition"):
        return RpcError(INVALID_PARAMS, f"{what}: {getattr(err, 'detail', '') or err}")
    return RpcError(INTERNAL_ERROR, f"{what}: {err}")


def _directory(params: dict[str, Any]) -> tuple[str, str]:
    """(workspace root, cwd) from a request's absolute ``cwd``: the git root above it, as the CLI picks."""
    from clients.cli.headless import default_workspace

    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path, got {cwd!r}")
    if not os.path.isdir(cwd):
        raise RpcError(INVALID_PARAMS, f"cwd {cwd} is not a directory")
    return str(default_workspace(Path(cwd))), str(Path(cwd).resolve())


class Agent:
    """One editor connection: its sessions, and one loop client."""

    def __init__(self, version: str, client_caps: dict[str, Any] | None = None) -> None:
        self.version = version
        self.client_caps = client_caps if client_caps is not None else {}
        """The editor's ``clientCapabilities`` from ``initialize`` (the dict is the one main.py fills)."""
        self.conn: Connection | None = None
        self.sessions: dict[str, Session] = {}
        self._client: LoopClient | None = None
        self._client_lock = asyncio.Lock()
        self._setup: Any = None

    # ---- wiring ----

    def handlers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        requests = {
            "initialize": self.initialize, "authenticate": self.authenticate,
            "session/new": self.new_session, "session/load": self.load_session,
            "session/resume": self.resume_session, "session/list": self.list_sessions,
            "session/close": self.close_session, "session/set_mode": self.set_mode,
            "session/prompt": self.prompt,
        }
        return requests, {"session/cancel": self.cancel}

    async def _update(self, session_id: str, update: dict[str, Any]) -> None:
        assert self.conn is not None
        await self.conn.notify("session/update", {"sessionId": session_id, "update": update})

    async def client(self, workspace: str) -> LoopClient:
        """The loop client, the services started first when nothing runs (as every client command does)."""
        async with self._client_lock:
            if self._client is None:
                from clients.cli import control
                from clients.cli.connection.loop import LoopClient

                def start() -> Any:
                    setup = control.resolve(Path(workspace))
                    control.ensure_running(setup, ["loop"])
                    return setup

                try:
                    self._setup = await asyncio.to_thread(start)
                except Exception as exc:  # config or services: one line the editor shows
                    raise RpcError(INTERNAL_ERROR, f"cannot reach the loop service: {exc}") from None
                self._client = LoopClient(self._setup.endpoints["loop"])
            return self._client

    def _session(self, params: dict[str, Any]) -> Session:
        sid = params.get("sessionId")
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"unknown session {sid!r}: call session/new or session/load first")
        return session

    # ---- methods ----

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        given = params.get("clientCapabilities")
        self.client_caps.clear()
        self.client_caps.update(given if isinstance(given, dict) else {})
        return mapping.capabilities(self.version)

    def reads_buffers(self) -> bool:
        """The editor serves ``fs/read_text_file``: the read tool shows its unsaved buffers."""
        fs = self.client_caps.get("fs")
        return isinstance(fs, dict) and fs.get("readTextFile") is True

    async def authenticate(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}  # no auth methods: the model's key lives in the user's config

    async def _open(self, params: dict[str, Any], session_id: str) -> tuple[Session, Any]:
        from clients.cli.connection.loop import ClientError

        workspace, cwd = _directory(params)
        client = await self.client(workspace)
        client.cwd = cwd
        servers = params.get("mcpServers") or []
        if not isinstance(servers, list):
            raise RpcError(INVALID_PARAMS, "mcpServers must be a list")
        try:
            opened = await client.open_session(workspace, session_id, interactive=False)
        except ClientError as err:
            raise _error(err, "cannot open the session") from None
        for warning in opened.warnings:
            print(f"ai-coding acp: {warning}", file=sys.stderr)
        session = self.sessions.get(opened.session_id) or Session(opened.session_id, workspace, cwd)
        self.sessions[session.id] = session
        for problem in await self._join_mcp(servers, session):
            print(f"ai-coding acp: {problem}", file=sys.stderr)
        return session, opened

    async def _join_mcp(self, servers: list[Any], session: Session) -> list[str]:
        """Start the editor's MCP servers in the gateway for ``session`` alone (never written to the
        user's mcp.local.yaml; other sessions neither see nor call them; they stop when the session
        closes here or this process ends, however it ends); the sentences for those left out."""
        if not servers:
            return []
        from clients.acp.editor_mcp import EditorServers

        if session.mcp_servers is not None:  # a second load of a session this process serves
            await session.mcp_servers.leave()
        session.mcp_servers = EditorServers(self._setup, session.id)
        return await session.mcp_servers.join(servers)

    async def _mode(self, session: Session) -> str:
        from clients.cli.connection.loop import ClientError

        try:
            reply = await (await self.client(session.workspace)).run_command(session.id, "permissions", "")
            return str(json.loads(reply.data_json or "{}").get("mode", "confirm"))
        except (ClientError, ValueError):
            return "confirm"

    def _after_answer(self, session_id: str, updates: list[dict[str, Any]]) -> None:
        """Send ``updates`` once the response naming the session is out (the editor knows it then)."""
        async def send() -> None:
            for update in updates:
                await self._update(session_id, update)

        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(send()))

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session, _ = await self._open(params, "")
        self._after_answer(session.id, [mapping.available_commands()])
        return {"sessionId": session.id, "modes": mapping.mode_state(await self._mode(session))}

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        from clients.cli.connection.loop import ClientError

        session, _ = await self._load(params)
        try:
            detail = await (await self.client(session.workspace)).get_session(session.workspace, session.id)
        except ClientError as err:
            raise _error(err, "cannot read the session") from None
        for update in history.replay(detail.messages_json, session.workspace):  # before the answer, as ACP says
            await self._update(session.id, update)
        self._after_answer(session.id, [mapping.available_commands()])
        return {"modes": mapping.mode_state(await self._mode(session))}

    async def _load(self, params: dict[str, Any]) -> tuple[Session, Any]:
        sid = params.get("sessionId")
        if not isinstance(sid, str) or not sid:
            raise RpcError(INVALID_PARAMS, "sessionId is required (`ai-coding sessions list` shows them)")
        return await self._open(params, sid)

    async def resume_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session, _ = await self._load(params)
        self._after_answer(session.id, [mapping.available_commands()])
        return {"modes": mapping.mode_state(await self._mode(session))}

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        from clients.cli.connection.loop import ClientError

        workspace, _ = _directory(params if params.get("cwd") else {"cwd": os.getcwd()})
        try:
            listed = await (await self.client(workspace)).session_list(workspace)
        except ClientError as err:
            raise _error(err, "cannot list sessions") from None
        return {"sessions": [{
            "sessionId": s.session_id, "cwd": workspace, "title": s.preview or "(empty)",
            "updatedAt": datetime.datetime.fromtimestamp(s.last_activity, datetime.UTC).isoformat(),
        } for s in listed.sessions]}

    async def close_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        if session.stream is not None:  # the loop keeps the turn: `ai-coding attach` can follow it
            session.stream.close()
        del self.sessions[session.id]
        await self._drop_mcp(session)
        return {}

    @staticmethod
    async def _drop_mcp(session: Session) -> None:
        """Stop the editor's MCP servers of ``session`` (a gateway that is gone took them with it)."""
        if session.mcp_servers is not None:
            servers, session.mcp_servers = session.mcp_servers, None
            await servers.leave()

    async def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        from clients.cli.connection.loop import ClientError

        session = self._session(params)
        mode = params.get("modeId")
        if mode not in {m[0] for m in mapping.MODES}:
            raise RpcError(INVALID_PARAMS, f"unknown mode {mode!r}; use one of: "
                           f"{', '.join(m[0] for m in mapping.MODES)}")
        try:
            await (await self.client(session.workspace)).run_command(session.id, "permissions", str(mode))
        except ClientError as err:
            raise _error(err, "cannot switch the mode") from None
        self._after_answer(session.id, [{"sessionUpdate": "current_mode_update", "currentModeId": mode}])
        return {}

    async def cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is not None and session.stream is not None:
            session.cancelled = True
            session.stream.interrupt(views.Scope.TURN)

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        from clients.acp.turn import run_turn

        session = self._session(params)
        if session.stream is not None:
            raise RpcError(INVALID_REQUEST, "a prompt is already running in this session; wait for its answer "
                           "or send session/cancel")
        blocks = params.get("prompt")
        if not isinstance(blocks, list):
            raise RpcError(INVALID_PARAMS, "prompt must be a list of content blocks")
        given = prompt.convert(blocks)
        for note in given.notes:
            await self._update(session.id, mapping.chunk("agent_thought_chunk", note + "\n"))
        if not given.text.strip() and not given.attachments:
            raise RpcError(INVALID_PARAMS, "the prompt is empty; send a text block")
        assert self.conn is not None
        return await run_turn(self.conn, self._update, session, await self.client(session.workspace), given,
                              read_buffers=self.reads_buffers(), setup=self._setup)

    async def close(self) -> None:
        for session in self.sessions.values():
            for task in session.asks:
                task.cancel()
            if session.stream is not None:
                session.stream.close()
            await self._drop_mcp(session)
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()


__all__ = ["Agent", "PeerGone", "Session"]
