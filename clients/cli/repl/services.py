"""The REPL's side of the memory service and the MCP gateway: typed aio calls, one readable error line.

Requests and formatting are shared with ``ai-coding memory`` / ``ai-coding mcp`` through
``clients.cli.services_view``; gRPC stays in this module.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc, memory_pb2, memory_pb2_grpc

from clients.cli import services_view as view
from clients.cli.repl.connection import ClientError
from services.kernel.channels import aio_channel
from services.kernel.endpoints import Endpoint
from services.kernel.errors import reason_of

# How long `/mcp retry` waits for the server to settle before printing its state anyway.
RETRY_SETTLE_SECONDS = 30.0
_POLL_SECONDS = 0.3

T = TypeVar("T")


def _unreachable(service: str, endpoint: Endpoint) -> ClientError:
    return ClientError(f"the {service} is not reachable at {endpoint}",
                       hint="(start the services with `ai-coding up`)", reason="service_unavailable")


async def _call(service: str, endpoint: Endpoint, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run one RPC; UNAVAILABLE/timeouts say the service is down, other failures give the service's detail."""
    try:
        return await call()
    except grpc.aio.AioRpcError as err:
        # A status that carries a reason was the service's own answer (e.g. a memory store it
        # cannot open): its sentence names the file and the fix, so it is shown as it is.
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not reason_of(err):
            raise _unreachable(service, endpoint) from None
        reason = reason_of(err) or err.code().name.lower()
        raise ClientError(f"{what}: {err.details() or reason}", reason=reason) from None


class MemoryClient:
    """Typed calls to the Memory service for one workspace."""

    def __init__(self, endpoint: Endpoint, workspace: str) -> None:
        self.endpoint = endpoint
        self.workspace = workspace
        self._channel = aio_channel(endpoint)
        self._stub = memory_pb2_grpc.MemoryStub(self._channel)

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        return await _call("memory service", self.endpoint, what, call)

    async def list_notes(self) -> list[memory_pb2.Note]:
        """Every note of the workspace."""
        request = view.list_request(self.workspace)
        response = await self._run("/memory", lambda: self._stub.ListNotes(request, timeout=view.RPC_TIMEOUT))
        return list(response.notes)

    async def search(self, query: str) -> list[memory_pb2.RecallHit]:
        """Ranked recall that does not count as the model's use of the notes."""
        request = view.recall_request(self.workspace, query, k=10)
        response = await self._run("/memory search", lambda: self._stub.Recall(request, timeout=view.RPC_TIMEOUT))
        return list(response.hits)

    async def get(self, note_id: str) -> memory_pb2.Note:
        """One note by its full id."""
        request = memory_pb2.GetNoteRequest(workspace=self.workspace, id=note_id)
        response: memory_pb2.GetNoteResponse = await self._run(
            "/memory show", lambda: self._stub.GetNote(request, timeout=view.RPC_TIMEOUT))
        return response.note

    async def pin(self, note_id: str, pinned: bool) -> memory_pb2.Note:
        """Pin or unpin a note; returns it as stored."""
        request = memory_pb2.PinNoteRequest(workspace=self.workspace, id=note_id, pinned=pinned)
        response: memory_pb2.PinNoteResponse = await self._run(
            "/memory pin", lambda: self._stub.PinNote(request, timeout=view.RPC_TIMEOUT))
        return response.note

    async def forget(self, note_id: str) -> bool:
        """Delete a note; True when it was there."""
        request = memory_pb2.ForgetNoteRequest(workspace=self.workspace, id=note_id)
        response = await self._run("/memory forget",
                                   lambda: self._stub.ForgetNote(request, timeout=view.RPC_TIMEOUT))
        return bool(response.deleted)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()


class McpClient:
    """Typed calls to the MCP gateway."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._channel = aio_channel(endpoint)
        self._stub = mcp_gateway_pb2_grpc.McpGatewayStub(self._channel)

    async def servers(self) -> list[mcp_gateway_pb2.ServerStatus]:
        """Every configured server's status."""
        response = await _call("MCP gateway", self.endpoint, "/mcp", lambda: self._stub.ListServers(
            mcp_gateway_pb2.ListServersRequest(), timeout=view.LIST_TIMEOUT))
        return list(response.servers)

    async def retry(self, name: str, settle: float = RETRY_SETTLE_SECONDS) -> mcp_gateway_pb2.ServerStatus | None:
        """Reconnect ``name`` now; its state once a new attempt has settled (None: the server went away)."""
        before = await _call("MCP gateway", self.endpoint, f"/mcp retry {name}", lambda: self._stub.Reconnect(
            mcp_gateway_pb2.ReconnectRequest(server=name), timeout=view.LIST_TIMEOUT))
        deadline = time.monotonic() + settle
        while True:
            found = [s for s in await self.servers() if s.name == name]
            if not found:
                return None
            status = found[0]
            if view.retry_settled(before.status, status) or time.monotonic() > deadline:
                return status
            await asyncio.sleep(_POLL_SECONDS)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()


class ServiceClients:
    """The REPL's clients beside the loop: memory (for this workspace) and the MCP gateway."""

    def __init__(self, memory: Endpoint, mcp_gateway: Endpoint, workspace: str) -> None:
        self.memory = MemoryClient(memory, workspace)
        self.mcp = McpClient(mcp_gateway)

    async def close(self) -> None:
        """Close both channels."""
        await self.memory.close()
        await self.mcp.close()
