"""The memory service and the MCP gateway: typed aio calls, one readable error line.

The REPL's ``/memory`` / ``/mcp`` and the ``ai-coding memory`` / ``ai-coding mcp`` commands
use these clients; formatting is in ``clients.cli.services_view``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc, memory_pb2, memory_pb2_grpc

from clients.cli import convert, service_views, views
from clients.cli import services_view as view
from clients.cli.connection import shared_channel
from clients.cli.connection.loop import ClientError
from services.kernel.channels import FAST_RECONNECT, aio_channel
from services.kernel.endpoints import Endpoint
from services.kernel.errors import reason_of

# How long `/mcp retry` waits for the server to settle before printing its state anyway.
RETRY_SETTLE_SECONDS = 30.0
_POLL_SECONDS = 0.3
# A server's resources and prompts may take a while (the gateway waits for the server itself).
RESOURCE_TIMEOUT = 90.0

T = TypeVar("T")


def _channel(endpoint: Endpoint) -> tuple[grpc.aio.Channel, bool]:
    """(the channel to use, whether the client owns it): the process's shared one on its loop. Memory and
    the gateway may start on demand: their channels reconnect after 200 ms, not gRPC's 1 s."""
    shared = shared_channel(endpoint, FAST_RECONNECT)
    return (aio_channel(endpoint, FAST_RECONNECT), True) if shared is None else (shared, False)


async def _started(channel: grpc.aio.Channel, endpoint: Endpoint) -> None:
    """A service on demand that waits for its first call is started by this one (services/kernel/
    on_demand.py): wait until it takes calls, so the call is not refused while it starts."""
    from services.kernel.on_demand import START_WAIT_SECONDS, waiting

    if endpoint.scheme == "unix" and waiting(endpoint.path):
        with contextlib.suppress(TimeoutError):  # then the call says the service is not reachable
            await asyncio.wait_for(channel.channel_ready(), START_WAIT_SECONDS)


def _unreachable(service: str, endpoint: Endpoint) -> ClientError:
    return ClientError(f"the {service} is not reachable at {endpoint}",
                       hint="(start the services with `ai-coding up`)", reason="service_unavailable", status="unavailable")


async def _call(service: str, endpoint: Endpoint, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run one RPC; UNAVAILABLE/timeouts say the service is down, other failures give the service's detail."""
    try:
        return await call()
    except grpc.aio.AioRpcError as err:
        status = err.code().name.lower()
        reason = reason_of(err)
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not reason:
            raise _unreachable(service, endpoint) from None
        # The service itself answered (a stable reason rides along): its sentence names the cause.
        raise ClientError(f"{what}: {err.details() or reason or status}", reason=reason or status,
                          detail=err.details() or "", status=status) from None


class MemoryClient:
    """Typed calls to the Memory service for one workspace."""

    def __init__(self, endpoint: Endpoint, workspace: str) -> None:
        self.endpoint = endpoint
        self.workspace = workspace
        self._channel, self._owned = _channel(endpoint)
        self._stub = memory_pb2_grpc.MemoryStub(self._channel)

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        await _started(self._channel, self.endpoint)
        return await _call("memory service", self.endpoint, what, call)

    async def list_notes(self, kind: str = "", limit: int = 0) -> list[service_views.Note]:
        """The notes of the workspace (all kinds, no limit by default)."""
        request = memory_pb2.ListNotesRequest(workspace=self.workspace, kind=kind, limit=limit)
        response = await self._run("/memory", lambda: self._stub.ListNotes(request, timeout=view.RPC_TIMEOUT))
        return [convert.copy(note, service_views.Note) for note in response.notes]

    async def recall(self, query: str, k: int = 10, kind: str = "", scene: str = "") -> service_views.Recall:
        """Ranked recall for a person: ``skip_hit_count``, so it does not count as the model's use."""
        request = convert.recall_request(self.workspace, query, k, kind, scene)
        response = await self._run("/memory search", lambda: self._stub.Recall(request, timeout=view.RPC_TIMEOUT))
        return convert.copy(response, service_views.Recall)

    async def search(self, query: str) -> list[service_views.RecallHit]:
        """The hits of :meth:`recall`."""
        return list((await self.recall(query)).hits)

    async def get(self, note_id: str) -> service_views.Note:
        """One note by its id."""
        request = memory_pb2.GetNoteRequest(workspace=self.workspace, id=note_id)
        response: memory_pb2.GetNoteResponse = await self._run(
            "/memory show", lambda: self._stub.GetNote(request, timeout=view.RPC_TIMEOUT))
        return convert.copy(response.note, service_views.Note)

    async def pin(self, note_id: str, pinned: bool) -> service_views.Note:
        """Pin or unpin a note; returns it as stored."""
        request = memory_pb2.PinNoteRequest(workspace=self.workspace, id=note_id, pinned=pinned)
        response: memory_pb2.PinNoteResponse = await self._run(
            "/memory pin", lambda: self._stub.PinNote(request, timeout=view.RPC_TIMEOUT))
        return convert.copy(response.note, service_views.Note)

    async def forget(self, note_id: str) -> bool:
        """Delete a note; True when it was there."""
        request = memory_pb2.ForgetNoteRequest(workspace=self.workspace, id=note_id)
        response = await self._run("/memory forget",
                                   lambda: self._stub.ForgetNote(request, timeout=view.RPC_TIMEOUT))
        return bool(response.deleted)

    async def close(self) -> None:
        """Close a channel of its own (the process's shared one stays until exit)."""
        if self._owned:
            await self._channel.close()


class McpClient:
    """Typed calls to the MCP gateway."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._channel, self._owned = _channel(endpoint)
        self._stub = mcp_gateway_pb2_grpc.McpGatewayStub(self._channel)

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        await _started(self._channel, self.endpoint)
        return await _call("MCP gateway", self.endpoint, what, call)

    async def servers(self, log_lines: int = 0) -> list[service_views.ServerStatus]:
        """Every configured server's status, with its newest ``log_lines`` log lines."""
        response = await self._run("/mcp", lambda: self._stub.ListServers(
            mcp_gateway_pb2.ListServersRequest(log_lines=log_lines), timeout=view.LIST_TIMEOUT))
        return [_status(status) for status in response.servers]

    async def catalog(self) -> list[service_views.CatalogEntry]:
        """The tools the model can call on every server."""
        response = await self._run("/mcp", lambda: self._stub.GetCatalog(
            mcp_gateway_pb2.GetCatalogRequest(), timeout=view.LIST_TIMEOUT))
        return [convert.copy(entry, service_views.CatalogEntry) for entry in response.entries]

    async def add(self, server_json: str) -> service_views.ServerStatus:
        """Add a server (its config entry as JSON) and keep it in mcp.local.yaml."""
        response = await self._run("add", lambda: self._stub.AddServer(
            mcp_gateway_pb2.AddServerRequest(server_json=server_json), timeout=view.LIST_TIMEOUT))
        return _status(response.status)

    async def add_for_run(self, server_json: str, source: str, session_id: str = "") -> str:
        """Add a server for the gateway's run only (``source`` names where it came from, e.g. an editor's
        session; never written to mcp.local.yaml), for the loop session ``session_id`` alone when given:
        "" when it is there (a name in use counts as there, the user's own entry winning), else why the
        gateway refused it."""
        request = mcp_gateway_pb2.AddServerRequest(server_json=server_json, project_source=source,
                                                   session_id=session_id)
        try:
            await self._stub.AddServer(request, timeout=view.LIST_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.ALREADY_EXISTS:
                return ""
            if err.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION):
                return str(err.details() or "refused")
            raise ClientError(f"the MCP gateway did not take the server: {err.details() or err.code().name}",
                              reason=reason_of(err) or err.code().name.lower(),
                              status=err.code().name.lower()) from None
        return ""

    async def drop_session(self, session_id: str) -> list[str]:
        """Stop the servers added for ``session_id`` alone; their names."""
        response = await self._run("drop", lambda: self._stub.DropSessionServers(
            mcp_gateway_pb2.DropSessionServersRequest(session_id=session_id), timeout=view.LIST_TIMEOUT))
        return list(response.dropped)

    def hold(self, session_id: str, holder: str) -> grpc.aio.UnaryStreamCall[
            mcp_gateway_pb2.HoldSessionServersRequest, mcp_gateway_pb2.HoldSessionServersEvent]:
        """Hold ``session_id``'s servers while the returned stream stays open (read it to follow the
        gateway; cancel it, or exit, and the gateway stops them)."""
        return self._stub.HoldSessionServers(
            mcp_gateway_pb2.HoldSessionServersRequest(session_id=session_id, holder=holder))

    async def login(self, name: str) -> str:
        """Start a sign-in: the URL to open ("" when the server is already signed in)."""
        response = await self._run("login", lambda: self._stub.Login(
            mcp_gateway_pb2.LoginRequest(server=name), timeout=60))
        return str(response.authorization_url)

    async def logout(self, name: str) -> None:
        """Forget a server's tokens."""
        await self._run("logout", lambda: self._stub.Logout(
            mcp_gateway_pb2.LogoutRequest(server=name), timeout=view.LIST_TIMEOUT))

    async def wait_for(self, name: str, done: Callable[[service_views.ServerStatus], bool],
                       timeout: float) -> service_views.ServerStatus | None:
        """Poll ``name`` until ``done`` says so or ``timeout`` passes; its last state (None: it went away)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [s for s in await self.servers() if s.name == name]
            if not found or done(found[0]) or time.monotonic() > deadline:
                return found[0] if found else None
            await asyncio.sleep(_POLL_SECONDS)

    async def resources(self, server: str) -> views.ToolResult:
        """The resources ``server`` offers, as text (a refusal is a failed result)."""
        response = await self._run("resources", lambda: self._stub.ListResources(
            mcp_gateway_pb2.ListResourcesRequest(server=server), timeout=RESOURCE_TIMEOUT))
        return convert.tool_result(response.result)

    async def read_resource(self, server: str, uri: str) -> views.ToolResult:
        """One resource of ``server``."""
        response = await self._run("read", lambda: self._stub.ReadResource(
            mcp_gateway_pb2.ReadResourceRequest(server=server, uri=uri), timeout=RESOURCE_TIMEOUT))
        return convert.tool_result(response.result)

    async def prompts(self, server: str) -> views.ToolResult:
        """The prompts ``server`` offers, with their arguments."""
        response = await self._run("prompts", lambda: self._stub.ListPrompts(
            mcp_gateway_pb2.ListPromptsRequest(server=server), timeout=RESOURCE_TIMEOUT))
        return convert.tool_result(response.result)

    async def prompt(self, server: str, name: str, arguments_json: str) -> views.ToolResult:
        """A prompt of ``server`` filled with its arguments (a JSON object of strings)."""
        response = await self._run("prompt", lambda: self._stub.GetPrompt(
            mcp_gateway_pb2.GetPromptRequest(server=server, name=name, arguments_json=arguments_json),
            timeout=RESOURCE_TIMEOUT))
        return convert.tool_result(response.result)

    async def complete_prompt(self, server: str, prompt: str, argument: str, value: str,
                              context_json: str = "{}") -> views.ToolResult:
        """Values ``server`` suggests for ``argument`` of ``prompt`` given what was typed (``value``)."""
        response = await self._run("complete", lambda: self._stub.CompletePrompt(
            mcp_gateway_pb2.CompletePromptRequest(server=server, prompt=prompt, argument=argument, value=value,
                                                  context_json=context_json), timeout=RESOURCE_TIMEOUT))
        return convert.tool_result(response.result)

    async def retry(self, name: str, settle: float = RETRY_SETTLE_SECONDS) -> service_views.ServerStatus | None:
        """Reconnect ``name`` now; its state once a new attempt has settled (None: the server went away)."""
        response = await self._run(f"/mcp retry {name}", lambda: self._stub.Reconnect(
            mcp_gateway_pb2.ReconnectRequest(server=name), timeout=view.LIST_TIMEOUT))
        before = _status(response.status)
        return await self.wait_for(name, lambda now: view.retry_settled(before, now), settle)

    async def close(self) -> None:
        """Close a channel of its own (the process's shared one stays until exit)."""
        if self._owned:
            await self._channel.close()


def _status(message: mcp_gateway_pb2.ServerStatus) -> service_views.ServerStatus:
    return convert.copy(message, service_views.ServerStatus)


class ServiceClients:
    """The REPL's clients beside the loop: memory (for this workspace) and the MCP gateway."""

    def __init__(self, memory: Endpoint, mcp_gateway: Endpoint, workspace: str) -> None:
        self.memory = MemoryClient(memory, workspace)
        self.mcp = McpClient(mcp_gateway)

    async def close(self) -> None:
        """Close both channels."""
        await self.memory.close()
        await self.mcp.close()
