"""The MCP gateway behind the loop's ``McpClient`` port (services/loop/core/ports.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from services.kernel.channels import call_metadata
from services.kernel.endpoints import Endpoint
from services.loop.adapters.on_demand import ServiceChannel
from services.loop.adapters.tools import result_to_outcome
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import ElicitAsker, McpCatalog, McpClient, ToolChunkEvent, ToolOutcome
from services.mcp_gateway.catalog import ToolEntry, server_listing
from services.mcp_gateway.elicitation import ElicitAsk, ElicitReply
from services.mcp_gateway.tool_schema import describe_text, server_key


def server_listings(entries: Iterable[mcp_gateway_pb2.CatalogEntry]) -> dict[str, str]:
    """``mcp_describe(server)``'s answer for each server, under :func:`server_key`."""
    tools = [ToolEntry(e.server, e.tool, e.description, _schema(e.input_schema_json)) for e in entries]
    return {server_key(s): server_listing(s, tools) for s in dict.fromkeys(t.server for t in tools)}


def _schema(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class GrpcMcpClient:
    """Catalog and calls through the gateway; failures raise AuxiliaryError."""

    def __init__(self, endpoint: Endpoint, declared: Callable[[], bool] | None = None) -> None:
        self._service = ServiceChannel(endpoint, "mcp_catalog")
        self._declared = declared or (lambda: True)
        """Whether the config or the sidecar names any MCP server (services/mcp_gateway/sidecar_watch.py)."""
        self._client: mcp_gateway_pb2_grpc.McpGatewayStub | None = None

    async def _stub(self) -> mcp_gateway_pb2_grpc.McpGatewayStub:
        """The stub, once the gateway can take a call (it may be starting on demand)."""
        await self._service.started()
        if self._client is None:
            self._client = mcp_gateway_pb2_grpc.McpGatewayStub(self._service.channel)
        return self._client

    def wanted(self) -> bool:
        """False when asking would only start a gateway that has no server: it runs on demand, is not
        running, and no MCP server is configured (the servers a session brings start it themselves)."""
        return not self._service.waiting() or self._declared()

    def warm(self) -> None:
        if self.wanted():
            self._service.warm()

    async def close(self) -> None:
        await self._service.close()

    def for_session(self, session_id: str) -> McpClient:
        """This client as ``session_id`` uses it: it sees that session's own servers (an editor's) too."""
        return SessionMcpClient(self, session_id)

    async def catalog(self, timeout_seconds: float, session_id: str = "") -> McpCatalog:
        try:
            response = await (await self._stub()).GetCatalog(
                mcp_gateway_pb2.GetCatalogRequest(session_id=session_id), timeout=timeout_seconds,
                metadata=call_metadata()
            )
        except grpc.RpcError as err:
            raise AuxiliaryError("mcp_catalog", _reason(err)) from None
        return McpCatalog(
            text=str(response.text),
            permissions={e.qualified_name or f"{e.server}__{e.tool}": e.permission or "warn"
                         for e in response.entries},
            degraded={s.name: s.degraded_reason or s.reason for s in response.servers if s.degraded},
            described={**server_listings(response.entries),
                       **{e.qualified_name: describe_text(e.qualified_name, e.description, e.input_schema_json)
                          for e in response.entries}},
            schemas={e.qualified_name or f"{e.server}__{e.tool}": _schema(e.input_schema_json)
                     for e in response.entries},
        )

    async def resources(self, call_id: str, server: str, uri: str, timeout_seconds: float,
                        session_id: str = "") -> ToolOutcome:
        try:
            if uri:
                read = await (await self._stub()).ReadResource(mcp_gateway_pb2.ReadResourceRequest(
                    server=server, uri=uri, timeout_seconds=timeout_seconds, session_id=session_id),
                    timeout=timeout_seconds + 5.0, metadata=call_metadata())
                result = read.result
            else:
                listed = await (await self._stub()).ListResources(mcp_gateway_pb2.ListResourcesRequest(
                    server=server, timeout_seconds=timeout_seconds, session_id=session_id),
                    timeout=timeout_seconds + 5.0, metadata=call_metadata())
                result = listed.result
        except grpc.RpcError as err:
            raise AuxiliaryError("mcp_resources", _reason(err)) from None
        outcome = result_to_outcome(result)
        return ToolOutcome(call_id, "mcp_resources", outcome.ok, outcome.output, data=outcome.data,
                           error_code=outcome.error_code, error_message=outcome.error_message)

    async def call(self, call_id: str, server: str, tool: str, input_json: str, timeout_seconds: float,
                   on_chunk: Callable[[ToolChunkEvent], None], on_elicit: ElicitAsker | None = None,
                   session_id: str = "") -> ToolOutcome:
        request = mcp_gateway_pb2.McpCallToolRequest(
            call_id=call_id, server=server, tool=tool, input_json=input_json, timeout_seconds=timeout_seconds,
            session_id=session_id)
        try:
            async for item in (await self._stub()).CallTool(request, timeout=timeout_seconds + 5.0, metadata=call_metadata()):
                if item.HasField("chunk"):
                    on_chunk(ToolChunkEvent(call_id, item.chunk.stream or "progress", item.chunk.text))
                elif item.HasField("elicitation"):
                    await self._answer(item.elicitation, on_elicit, timeout_seconds)
                elif item.HasField("result"):
                    return result_to_outcome(item.result)
        except grpc.RpcError as err:
            raise AuxiliaryError("mcp_call", _reason(err)) from None
        raise AuxiliaryError("mcp_call", "the gateway ended the call without a result")

    async def add_project_server(self, entry: dict[str, Any], source: str, timeout_seconds: float) -> str:
        request = mcp_gateway_pb2.AddServerRequest(server_json=json.dumps(entry), project_source=source)
        try:
            await (await self._stub()).AddServer(request, timeout=timeout_seconds, metadata=call_metadata())
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.ALREADY_EXISTS:
                return ""  # this project's server from an earlier session, or a name the user configured
            if err.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION):
                return str(err.details() or "refused")
            raise AuxiliaryError("mcp_project_servers", _reason(err)) from None
        return ""

    async def _answer(self, asked: mcp_gateway_pb2.McpElicitation, on_elicit: ElicitAsker | None,
                      timeout_seconds: float) -> None:
        """Ask the user (declined when nobody can answer) and send the reply back to the gateway."""
        try:
            schema = json.loads(asked.requested_schema_json or "{}")
        except json.JSONDecodeError:
            schema = {}
        ask = ElicitAsk(asked.request_id, asked.server, asked.message, asked.mode or "form",
                        schema if isinstance(schema, dict) else {}, asked.url)
        reply = await on_elicit(ask) if on_elicit is not None else ElicitReply("decline")
        answer = mcp_gateway_pb2.McpElicitationAnswer(request_id=ask.request_id, action=reply.action,
                                                      content_json=json.dumps(dict(reply.content)))
        await (await self._stub()).AnswerElicitation(answer, timeout=timeout_seconds + 5.0, metadata=call_metadata())


def _reason(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    return code.name.lower() if code is not None else "error"


class SessionMcpClient:
    """The gateway as one loop session uses it: its catalog, calls and resources name the session,
    so servers added for it alone (an editor's, ACP ``session/new``) are seen by it and nobody else."""

    def __init__(self, inner: GrpcMcpClient, session_id: str) -> None:
        self._inner = inner
        self.session_id = session_id

    def for_session(self, session_id: str) -> McpClient:
        return self._inner.for_session(session_id)

    def wanted(self) -> bool:
        return self._inner.wanted()

    def warm(self) -> None:
        self._inner.warm()

    async def catalog(self, timeout_seconds: float) -> McpCatalog:
        return await self._inner.catalog(timeout_seconds, self.session_id)

    async def call(self, call_id: str, server: str, tool: str, input_json: str, timeout_seconds: float,
                   on_chunk: Callable[[ToolChunkEvent], None], on_elicit: ElicitAsker | None = None) -> ToolOutcome:
        return await self._inner.call(call_id, server, tool, input_json, timeout_seconds, on_chunk, on_elicit,
                                      self.session_id)

    async def resources(self, call_id: str, server: str, uri: str, timeout_seconds: float) -> ToolOutcome:
        return await self._inner.resources(call_id, server, uri, timeout_seconds, self.session_id)

    async def add_project_server(self, entry: dict[str, Any], source: str, timeout_seconds: float) -> str:
        return await self._inner.add_project_server(entry, source, timeout_seconds)
