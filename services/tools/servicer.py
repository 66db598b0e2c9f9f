"""The ToolRuntime gRPC servicer: a thin adapter from the wire to :class:`ToolRuntime`."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from ai_coding.v1 import tools_pb2, tools_pb2_grpc

from services.kernel.errors import abort
from services.kernel.netgrants import EgressAsk
from services.tools import convert
from services.tools.checkpoints.rpc import CheckpointRpcs
from services.tools.config import network_mode
from services.tools.domain import Chunk, ToolCallResult
from services.tools.egress.grants import ASK_USER
from services.tools.egress.session_grants import session_egress
from services.tools.errors import UnknownSession, WorkspaceError
from services.tools.runtime import ToolRuntime

log = logging.getLogger("ai_coding.tools")


class ToolRuntimeServicer(CheckpointRpcs, tools_pb2_grpc.ToolRuntimeServicer):
    """OpenSession / CloseSession / ListTools / CallTool (and the checkpoint RPCs) over :class:`ToolRuntime`."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime
        self.runtime_checkpoints = runtime.checkpoints

    def _root_of(self, session_id: str) -> Path:
        return self.runtime.session_root(session_id)

    def _open_sessions(self) -> set[str]:
        return set(self.runtime.sessions)

    async def OpenSession(self, request: tools_pb2.OpenSessionRequest,
                          context: grpc.aio.ServicerContext) -> tools_pb2.OpenSessionResponse:
        try:
            opened = await self.runtime.open_session(convert.session_request(request))
        except WorkspaceError as exc:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, exc.reason, str(exc))
        for warning in opened.warnings:
            log.warning("session %s: %s", request.session_id, warning)
        return convert.opened_session(opened)

    async def CloseSession(self, request: tools_pb2.CloseSessionRequest,
                           context: grpc.aio.ServicerContext) -> tools_pb2.CloseSessionResponse:
        stopped = await self.runtime.close_session(request.session_id)
        return tools_pb2.CloseSessionResponse(jobs_stopped=stopped)

    async def ListTools(self, request: tools_pb2.ListToolsRequest,
                        context: grpc.aio.ServicerContext) -> tools_pb2.ListToolsResponse:
        return tools_pb2.ListToolsResponse(tools=[convert.tool_spec(s) for s in self.runtime.list_tools()])

    async def CallTool(self, request: tools_pb2.CallToolRequest,
                       context: grpc.aio.ServicerContext) -> AsyncIterator[tools_pb2.CallToolResponse]:
        chunks: asyncio.Queue[Chunk | EgressAsk] = asyncio.Queue()

        async def emit(stream: str, text: str) -> None:
            await chunks.put(Chunk(request.call_id, stream, text))

        async def ask_user(ask: EgressAsk) -> None:
            await chunks.put(ask)

        call_context = contextvars.copy_context()  # the call's sandboxed commands ask through this stream
        call_context.run(ASK_USER.set, ask_user if request.egress_asks and not request.dry_run else None)
        call = asyncio.create_task(self.runtime.call(
            request.session_id, request.call_id, request.tool, request.arguments_json,
            max(0.0, request.timeout_seconds), emit, request.dry_run), context=call_context)
        getter: asyncio.Task[Chunk | EgressAsk] | None = None
        try:
            while not call.done():
                getter = asyncio.create_task(chunks.get())
                await asyncio.wait({getter, call}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield self._item(getter.result())
                    getter = None
            if getter is not None:
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getter
                if not getter.cancelled():
                    yield self._item(getter.result())
                getter = None
            while not chunks.empty():
                yield self._item(chunks.get_nowait())
            result = await self._result(call, context)
            yield convert.result(result)
        finally:
            for task in (getter, call):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    @staticmethod
    def _item(item: Chunk | EgressAsk) -> tools_pb2.CallToolResponse:
        return convert.egress_ask(item) if isinstance(item, EgressAsk) else convert.chunk(item)

    async def GrantEgress(self, request: tools_pb2.GrantEgressRequest,
                          context: grpc.aio.ServicerContext) -> tools_pb2.GrantEgressResponse:
        egress = self.runtime.egress
        applied = egress is not None and egress.grants.answer(request.session_id, request.ask_id,
                                                              convert.grant(request))
        return tools_pb2.GrantEgressResponse(applied=applied)

    async def SessionEgress(self, request: tools_pb2.SessionEgressRequest,
                            context: grpc.aio.ServicerContext) -> tools_pb2.SessionEgressResponse:
        egress = self.runtime.egress
        if egress is None:
            why = self.runtime.egress_error or "the sandbox's network is not `proxy`"
            return tools_pb2.SessionEgressResponse(error=why if request.allow or request.revoke else "")
        found = session_egress(egress, request.session_id, request.allow, request.revoke)
        return tools_pb2.SessionEgressResponse(
            granted=found.granted, error=found.error,
            proxy=network_mode(self.runtime.config.sandbox.network) == "proxy",
            refused=[tools_pb2.EgressRefusal(target=target, reason=r.reason, count=r.count, background=r.background)
                     for target, r in found.refused])

    async def _result(self, call: asyncio.Task[ToolCallResult], context: grpc.aio.ServicerContext) -> ToolCallResult:
        try:
            return call.result()
        except UnknownSession as exc:
            await abort(context, grpc.StatusCode.NOT_FOUND, exc.reason, str(exc))
        except Exception as exc:
            log.exception("tool call failed")
            await abort(context, grpc.StatusCode.INTERNAL, "internal_error",
                        f"the tool service failed ({type(exc).__name__}); see the tools log")
