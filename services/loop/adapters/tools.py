"""``ToolRunner`` over the tools service (ToolRuntime gRPC).

A tools service that cannot be reached or dies mid-call is not an error of the
turn: the call ends with ``tool_service_unavailable`` as its result, the model
sees it and the turn goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from ai_coding.v1 import common_pb2, tools_pb2, tools_pb2_grpc

from services.kernel.channels import aio_channel, call_metadata
from services.kernel.endpoints import Endpoint
from services.kernel.errors import reason_of
from services.kernel.netgrants import EgressAsk, GrantScope, HostRefusal, SessionGrants
from services.loop.core.egress import EgressAsker
from services.loop.core.errors import ToolServiceError
from services.loop.core.ports import ToolChunkEvent, ToolDef, ToolOutcome
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level

# Control calls (open, list, close) are local and quick; a longer wait means the
# service is wedged, and the loop would rather degrade than hang.
CONTROL_DEADLINE_S = 10.0
# The service applies the tool's own limit; this margin lets its structured
# timeout result arrive before our own deadline fires.
CALL_DEADLINE_MARGIN_S = 5.0
OLD_CHANNEL_GRACE_S = 120.0
log = logging.getLogger("ai_coding.loop")
GRANT_SCOPES = {GrantScope.DENY: tools_pb2.EGRESS_GRANT_SCOPE_DENY, GrantScope.ONCE: tools_pb2.EGRESS_GRANT_SCOPE_ONCE,
                GrantScope.SESSION: tools_pb2.EGRESS_GRANT_SCOPE_SESSION}
# Every session lists the same few tool specs: one ToolDef (with its parsed schema and its model-facing
# dict) per distinct spec, shared by all sessions, instead of ~20 parsed schemas each (a third of what
# a short session held, and most of the loop's RSS growth over 1,000 short sessions: bench/footprint.py).
# ToolDef is frozen and nothing writes into its schema. Past this many distinct specs the cache starts over.
MAX_SHARED_TOOL_DEFS = 512
UNAVAILABLE_HINT = "The tool service is down or restarting; retry the call shortly or continue without it."


def tool_spec_to_def(spec: common_pb2.ToolSpec) -> ToolDef:
    """A ToolSpec as a registry entry (no handler: the tools service runs it)."""
    try:
        params = json.loads(spec.parameters_json or "{}")
    except ValueError:
        params = {"type": "object"}
    try:
        permission = Level(spec.permission or "warn")
    except ValueError:  # a level this loop does not know asks, as an unknown tool does
        permission = Level.WARN
    return ToolDef(spec.name, spec.description, params, permission=permission, parallel_safe=spec.parallel_safe,
                   deferred=spec.deferred)


def result_to_outcome(result: Any) -> ToolOutcome:
    """A common.ToolResult as a ToolOutcome."""
    try:
        data = json.loads(result.data_json or "{}")
    except ValueError:
        data = {}
    return ToolOutcome(
        call_id=result.call_id,
        tool=result.tool,
        ok=result.ok,
        output=result.output,
        data=data if isinstance(data, dict) else {"value": data},
        error_code=result.error.code if result.HasField("error") else "",
        error_message=(result.error.message + (" " + result.error.hint if result.error.hint else "")).strip()
        if result.HasField("error")
        else "",
        duration_ms=result.duration_ms,
        limit_hit=result.limit_hit,
    )


def unavailable(call_id: str, tool: str, detail: str, started: float) -> ToolOutcome:
    """The result of a call the tools service could not answer."""
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        ok=False,
        output=f"tool_service_unavailable: {detail}. {UNAVAILABLE_HINT}",
        error_code=ErrorCode.TOOL_SERVICE_UNAVAILABLE,
        error_message=f"{detail}. {UNAVAILABLE_HINT}",
        duration_ms=(time.monotonic() - started) * 1000.0,
    )


class GrpcToolRunner:
    """The tools service as a ToolRunner."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._channel: grpc.aio.Channel | None = None
        self._client: tools_pb2_grpc.ToolRuntimeStub | None = None
        # What each open session was opened with, to open it again in a restarted tools service.
        self._opened: dict[str, tuple[str, list[str]]] = {}
        self._defs: dict[bytes, ToolDef] = {}

    def _shared_def(self, spec: common_pb2.ToolSpec) -> ToolDef:
        """``spec`` as a ToolDef, the same object for every session listing the same spec."""
        key = spec.SerializeToString(deterministic=True)
        known = self._defs.get(key)
        if known is None:
            if len(self._defs) >= MAX_SHARED_TOOL_DEFS:
                self._defs.clear()
            known = self._defs[key] = tool_spec_to_def(spec)
        return known

    @property
    def _stub(self) -> tools_pb2_grpc.ToolRuntimeStub:
        # Created on first use: an aio channel belongs to the event loop that is running then.
        if self._client is None:
            self._channel = _channel(self._endpoint)
            self._client = tools_pb2_grpc.ToolRuntimeStub(self._channel)
        return self._client

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    async def open_session(self, session_id: str, workspace: str, secret_env_names: list[str]) -> list[str]:
        request = tools_pb2.OpenSessionRequest(
            session_id=session_id, workspace_root=workspace, secret_env_names=secret_env_names
        )
        try:
            response = await self._control(lambda: self._stub.OpenSession(
                request, timeout=CONTROL_DEADLINE_S, metadata=call_metadata()))
        except grpc.RpcError as err:
            raise ToolServiceError(f"tools service: {_describe(err)}") from None
        self._opened[session_id] = (workspace, list(secret_env_names))
        return list(response.warnings)

    async def _reopened(self, session_id: str, err: grpc.RpcError) -> bool:
        """After a restart the tools service knows no session: open this one again (True when done).

        Nothing ran in the refused call, so the caller may send it again. The new service has no
        record of files read before the restart: an edit may first be asked to re-read its file."""
        if err.code() != grpc.StatusCode.NOT_FOUND or reason_of(err) != "unknown_session":
            return False
        opened = self._opened.get(session_id)
        if opened is None:
            return False
        try:
            await self.open_session(session_id, *opened)
        except ToolServiceError as exc:
            log.warning("reopening session %s in the tools service failed: %s", session_id, exc)
            return False
        log.info("reopened session %s in the restarted tools service", session_id)
        return True

    async def _control(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """Run a control call; when the service is unavailable, retry once on a fresh channel.

        A channel that failed to connect waits out a reconnect backoff (1 s and growing) during
        which calls fail at once; a fresh channel connects now, so a restarted service is found
        by the next call and a missing one still fails fast."""
        try:
            return await call()
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNAVAILABLE:
                raise
        await self._reset()
        return await call()

    async def _reset(self) -> None:
        channel, self._channel, self._client = self._channel, None, None
        if channel is not None:
            # Other sessions may still stream on the old channel: close it only after a grace period.
            asyncio.get_running_loop().call_later(OLD_CHANNEL_GRACE_S, lambda: asyncio.ensure_future(channel.close()))

    async def rpc(self, session_id: str, method: str, request: Any, timeout: float = CONTROL_DEADLINE_S) -> Any:
        """A unary ToolRuntime call by name (the checkpoint RPCs), reopening the session in a
        restarted tools service; grpc.RpcError when it fails."""
        def send() -> Awaitable[Any]:
            return getattr(self._stub, method)(request, timeout=timeout, metadata=call_metadata())  # type: ignore[no-any-return]

        try:
            return await self._control(send)
        except grpc.RpcError as err:
            if not await self._reopened(session_id, err):
                raise
        return await self._control(send)

    async def close_session(self, session_id: str) -> None:
        # Closing is best effort; the service drops idle sessions itself.
        self._opened.pop(session_id, None)
        with contextlib.suppress(grpc.RpcError):
            await self._stub.CloseSession(
                tools_pb2.CloseSessionRequest(session_id=session_id), timeout=CONTROL_DEADLINE_S
            )

    async def list_tools(self, session_id: str) -> list[ToolDef]:
        try:
            response = await self._control(lambda: self._stub.ListTools(
                tools_pb2.ListToolsRequest(session_id=session_id), timeout=CONTROL_DEADLINE_S,
                metadata=call_metadata(),
            ))
        except grpc.RpcError as err:
            raise ToolServiceError(f"tools service: {_describe(err)}") from None
        return [self._shared_def(spec) for spec in response.tools]

    async def call(
        self, session_id: str, call_id: str, tool: str, arguments_json: str, timeout_seconds: float,
        on_egress: EgressAsker | None = None,
    ) -> AsyncIterator[ToolChunkEvent | ToolOutcome]:
        started = time.monotonic()
        request = tools_pb2.CallToolRequest(
            session_id=session_id, call_id=call_id, tool=tool, arguments_json=arguments_json,
            timeout_seconds=max(timeout_seconds, 0.0), egress_asks=on_egress is not None,
        )
        deadline = timeout_seconds + CALL_DEADLINE_MARGIN_S if timeout_seconds > 0 else None
        for attempt in (1, 2):
            stream = self._stub.CallTool(request, timeout=deadline, metadata=call_metadata())
            try:
                async for item in stream:
                    if item.HasField("chunk"):
                        yield ToolChunkEvent(item.chunk.call_id or call_id, item.chunk.stream, item.chunk.text)
                    elif item.HasField("result"):
                        yield result_to_outcome(item.result)
                        return
                    elif item.HasField("egress_ask") and on_egress is not None:
                        await self._grant(session_id, item.egress_ask, on_egress)
            except grpc.RpcError as err:
                if attempt == 1 and await self._reopened(session_id, err):
                    continue
                if err.code() == grpc.StatusCode.UNAVAILABLE:
                    await self._reset()  # the next call connects afresh instead of waiting out a backoff
                yield _rpc_failure(err, call_id, tool, started)
                return
            finally:
                stream.cancel()
            break
        yield unavailable(call_id, tool, "the call ended without a result", started)


    async def _grant(self, session_id: str, asked: tools_pb2.EgressAsk, on_egress: EgressAsker) -> None:
        """Ask about a held connection and send the answer; the connection stays refused when the
        answer cannot be sent (the service refuses it when its wait ends)."""
        ask = EgressAsk(asked.ask_id, asked.host, asked.port, asked.method, asked.reason, asked.allow_line)
        grant = await on_egress(ask)
        request = tools_pb2.GrantEgressRequest(session_id=session_id, ask_id=ask.ask_id,
                                               scope=GRANT_SCOPES[grant.scope], reason=grant.reason)
        try:
            await self._stub.GrantEgress(request, timeout=CONTROL_DEADLINE_S, metadata=call_metadata())
        except grpc.RpcError as err:
            log.warning("the answer for %s did not reach the tools service: %s", ask.target, _describe(err))

    async def session_egress(self, session_id: str, allow: str = "", revoke: str = "") -> SessionGrants:
        request = tools_pb2.SessionEgressRequest(session_id=session_id, allow=allow, revoke=revoke)
        got = await self._control(lambda: self._stub.SessionEgress(request, timeout=CONTROL_DEADLINE_S,
                                                                     metadata=call_metadata()))
        return SessionGrants(tuple(got.granted), tuple(HostRefusal(r.target, r.reason, r.count, r.background)
                                                       for r in got.refused), got.error, got.proxy)

    async def dry_run(self, session_id: str, call_id: str, tool: str, arguments_json: str,
                      timeout_seconds: float) -> ToolOutcome:
        request = tools_pb2.CallToolRequest(session_id=session_id, call_id=call_id, tool=tool,
                                            arguments_json=arguments_json, timeout_seconds=timeout_seconds,
                                            dry_run=True)
        for attempt in (1, 2):
            stream = self._stub.CallTool(request, timeout=timeout_seconds, metadata=call_metadata())
            try:
                async for item in stream:
                    if item.HasField("result"):
                        return result_to_outcome(item.result)
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise TimeoutError(f"the dry run took longer than {timeout_seconds:g} s") from None
                if attempt == 1 and await self._reopened(session_id, err):
                    continue
                if err.code() == grpc.StatusCode.UNAVAILABLE:
                    await self._reset()
                    if attempt == 1:  # a dry run changes nothing: once more on a fresh channel, as _control does
                        continue
                raise ToolServiceError(f"tools service: {_describe(err)}") from None
            finally:
                stream.cancel()
            break
        raise ToolServiceError("tools service: the dry run ended without a result")


def _channel(endpoint: Endpoint) -> grpc.aio.Channel:
    """A channel with its own subchannel pool: gRPC shares subchannels (and their reconnect
    backoff) between channels to one target, so a fresh channel would otherwise still wait out
    the old one's backoff after the tools service comes back."""
    return aio_channel(endpoint, options=[("grpc.use_local_subchannel_pool", 1)])


def _rpc_failure(err: grpc.RpcError, call_id: str, tool: str, started: float) -> ToolOutcome:
    code = err.code() if hasattr(err, "code") else None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ToolOutcome(
            call_id=call_id, tool=tool, ok=False, output="tool_timeout: the call ran out of time",
            error_code=ErrorCode.TOOL_TIMEOUT, error_message="the call ran out of the turn's remaining time",
            duration_ms=(time.monotonic() - started) * 1000.0, limit_hit="timeout",
        )
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, None):
        return unavailable(call_id, tool, _describe(err), started)
    reason = reason_of(err) or (code.name.lower() if code else "error")
    details = err.details() if hasattr(err, "details") else str(err)
    return ToolOutcome(
        call_id=call_id, tool=tool, ok=False, output=f"{reason}: {details}", error_code=reason,
        error_message=str(details), duration_ms=(time.monotonic() - started) * 1000.0,
    )


def _describe(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else ""
    name = code.name if code is not None else "error"
    return f"{name}: {details}" if details else name
