"""The McpGateway gRPC servicer: adapts requests to :class:`Gateway` and back."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from services.kernel.errors import abort
from services.mcp_gateway import convert
from services.mcp_gateway.accounts import Accounts
from services.mcp_gateway.domain import CallOutcome, Progress
from services.mcp_gateway.elicitation import ElicitAsk
from services.mcp_gateway.errors import McpGatewayError, ServerConfigError, UnknownServer
from services.mcp_gateway.gateway import Gateway

log = logging.getLogger("ai_coding.mcp_gateway.servicer")

HOLD_PING_S = 5.0
"""How often a hold stream says the session's servers (a write to a vanished peer ends the stream)."""


class McpGatewayServicer(mcp_gateway_pb2_grpc.McpGatewayServicer):
    """gRPC face of the gateway; no decisions here."""

    def __init__(self, gateway: Gateway, accounts: Accounts) -> None:
        self._gateway = gateway
        self._accounts = accounts

    async def ListServers(self, request: mcp_gateway_pb2.ListServersRequest,
                          context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.ListServersResponse:
        views = self._gateway.servers(max(0, request.log_lines))
        return mcp_gateway_pb2.ListServersResponse(servers=[convert.status_to_proto(v) for v in views])

    async def GetCatalog(self, request: mcp_gateway_pb2.GetCatalogRequest,
                         context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.GetCatalogResponse:
        text, _ = self._gateway.catalog(request.session_id)
        sups = self._gateway.supervisors
        # Every tool, not only those the budgeted text summarizes: permissions and mcp_describe cover them all.
        entries = [convert.entry_to_proto(e, sups[e.server].settings if e.server in sups else None)
                   for e in self._gateway.entries(request.session_id)]
        servers = [convert.status_to_proto(v) for v in self._gateway.servers()
                   if self._gateway.visible(v.name, request.session_id)]
        return mcp_gateway_pb2.GetCatalogResponse(text=text, entries=entries, servers=servers)

    async def CallTool(self, request: mcp_gateway_pb2.McpCallToolRequest,
                       context: grpc.aio.ServicerContext) -> AsyncIterator[mcp_gateway_pb2.McpCallToolResponse]:
        queue: asyncio.Queue[Progress | ElicitAsk] = asyncio.Queue()

        async def on_progress(progress: Progress) -> None:
            queue.put_nowait(progress)

        call = asyncio.ensure_future(self._gateway.call(request.server, request.tool, request.input_json,
                                                        request.timeout_seconds, on_progress, queue.put_nowait,
                                                        request.session_id))
        try:
            while not call.done() or not queue.empty():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, call}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    item = getter.result()
                    if isinstance(item, ElicitAsk):
                        yield convert.elicitation_to_proto(item)
                    else:
                        yield convert.progress_to_proto(request.call_id, item)
                else:
                    getter.cancel()
            try:
                outcome = call.result()
            except Exception as exc:  # a bug must still end the stream with one readable result
                log.exception("mcp call %s/%s failed", request.server, request.tool)
                outcome = CallOutcome(False, f"internal error in the MCP gateway: {type(exc).__name__}",
                                      error_code="mcp_internal_error", error_message=str(exc)[:200])
            qualified = f"{request.server}__{request.tool.removeprefix(request.server + '__')}"
            yield convert.outcome_to_proto(request.call_id, qualified, outcome)
        finally:
            if not call.done():
                call.cancel()

    async def AnswerElicitation(self, request: mcp_gateway_pb2.McpElicitationAnswer,
                                context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.McpElicitationAnswered:
        content: dict[str, Any] = {}
        if request.content_json.strip():
            try:
                parsed = json.loads(request.content_json)
            except json.JSONDecodeError as exc:
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument",
                            f"content_json is not JSON ({exc.msg}); send a JSON object of field values")
            if not isinstance(parsed, dict):
                await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument",
                            "content_json must be a JSON object of field values")
            content = parsed
        delivered = self._gateway.elicitations.answer(request.request_id, request.action, content)
        return mcp_gateway_pb2.McpElicitationAnswered(delivered=delivered)

    async def ListResources(self, request: mcp_gateway_pb2.ListResourcesRequest,
                            context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.ListResourcesResponse:
        outcome = await self._gateway.resources(request.server, request.timeout_seconds, request.session_id)
        return mcp_gateway_pb2.ListResourcesResponse(result=convert.result_to_proto("", request.server, outcome))

    async def ReadResource(self, request: mcp_gateway_pb2.ReadResourceRequest,
                           context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.ReadResourceResponse:
        outcome = await self._gateway.read_resource(request.server, request.uri, request.timeout_seconds,
                                                    request.session_id)
        return mcp_gateway_pb2.ReadResourceResponse(result=convert.result_to_proto("", request.server, outcome))

    async def ListPrompts(self, request: mcp_gateway_pb2.ListPromptsRequest,
                          context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.ListPromptsResponse:
        outcome = await self._gateway.prompts(request.server, request.timeout_seconds)
        return mcp_gateway_pb2.ListPromptsResponse(result=convert.result_to_proto("", request.server, outcome))

    async def GetPrompt(self, request: mcp_gateway_pb2.GetPromptRequest,
                        context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.GetPromptResponse:
        outcome = await self._gateway.prompt(request.server, request.name, request.arguments_json,
                                             request.timeout_seconds)
        return mcp_gateway_pb2.GetPromptResponse(result=convert.result_to_proto("", request.server, outcome))

    async def CompletePrompt(self, request: mcp_gateway_pb2.CompletePromptRequest,
                             context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.CompletePromptResponse:
        outcome = await self._gateway.complete_prompt(request.server, request.prompt, request.argument,
                                                      request.value, request.context_json, request.timeout_seconds)
        return mcp_gateway_pb2.CompletePromptResponse(result=convert.result_to_proto("", request.server, outcome))

    async def Reconnect(self, request: mcp_gateway_pb2.ReconnectRequest,
                        context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.ReconnectResponse:
        try:
            view = self._gateway.reconnect(request.server)
        except UnknownServer as exc:
            await abort(context, grpc.StatusCode.NOT_FOUND, exc.reason, str(exc))
        return mcp_gateway_pb2.ReconnectResponse(status=convert.status_to_proto(view))

    async def AddServer(self, request: mcp_gateway_pb2.AddServerRequest,
                        context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.AddServerResponse:
        try:
            entry = json.loads(request.server_json or "{}")
        except json.JSONDecodeError as exc:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "mcp_config_invalid",
                        f"server_json is not valid JSON: {exc.msg}")
        if not isinstance(entry, dict):
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "mcp_config_invalid",
                        "server_json must be one JSON object shaped like an mcp.servers[] item")
        try:
            view = await self._gateway.add_server(entry, request.project_source, request.session_id)
        except ServerConfigError as exc:
            code = grpc.StatusCode.ALREADY_EXISTS if "already exists" in exc.message else \
                grpc.StatusCode.INVALID_ARGUMENT
            await abort(context, code, exc.reason, str(exc))
        except McpGatewayError as exc:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, exc.reason, str(exc))
        return mcp_gateway_pb2.AddServerResponse(status=convert.status_to_proto(view))

    async def DropSessionServers(self, request: mcp_gateway_pb2.DropSessionServersRequest,
                                 context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.DropSessionServersResponse:
        return mcp_gateway_pb2.DropSessionServersResponse(dropped=await self._gateway.drop_session(request.session_id))

    async def HoldSessionServers(self, request: mcp_gateway_pb2.HoldSessionServersRequest,
                                 context: grpc.aio.ServicerContext
                                 ) -> AsyncIterator[mcp_gateway_pb2.HoldSessionServersEvent]:
        if not request.session_id:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "mcp_config_invalid",
                        "session_id is required: the loop session whose servers to hold")
        sessions = self._gateway.sessions
        sessions.hold(request.session_id)
        log.info("%s holds the MCP servers of session %s", request.holder or "a client", request.session_id)
        try:
            while True:
                yield mcp_gateway_pb2.HoldSessionServersEvent(servers=sessions.names(request.session_id))
                await asyncio.sleep(HOLD_PING_S)
        finally:  # the client closed the stream, exited or was killed: its socket is gone
            sessions.release(request.session_id)

    async def Login(self, request: mcp_gateway_pb2.LoginRequest,
                    context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.LoginResponse:
        try:
            url, view = await self._accounts.login(request.server)
        except UnknownServer as exc:
            await abort(context, grpc.StatusCode.NOT_FOUND, exc.reason, str(exc))
        except McpGatewayError as exc:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, exc.reason, str(exc))
        return mcp_gateway_pb2.LoginResponse(authorization_url=url, status=convert.status_to_proto(view))

    async def Logout(self, request: mcp_gateway_pb2.LogoutRequest,
                     context: grpc.aio.ServicerContext) -> mcp_gateway_pb2.LogoutResponse:
        try:
            view = await self._accounts.logout(request.server)
        except UnknownServer as exc:
            await abort(context, grpc.StatusCode.NOT_FOUND, exc.reason, str(exc))
        except McpGatewayError as exc:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, exc.reason, str(exc))
        return mcp_gateway_pb2.LogoutResponse(status=convert.status_to_proto(view))
