"""protobuf <-> domain for the ToolRuntime service (the only module that sees both)."""

from __future__ import annotations

import json

from ai_coding.v1 import common_pb2, tools_pb2

from services.kernel.netgrants import EgressAsk, Grant, GrantScope
from services.tools.domain import Chunk, OpenedSession, SessionRequest, ToolCallResult
from services.tools.schemas import ToolSpecData


def session_request(msg: tools_pb2.OpenSessionRequest) -> SessionRequest:
    return SessionRequest(
        session_id=msg.session_id, workspace_root=msg.workspace_root, extra_roots=list(msg.extra_roots),
        sandbox_mode=msg.sandbox.mode if msg.HasField("sandbox") else "",
        network=msg.sandbox.network if msg.HasField("sandbox") else None,
        secret_env_names=list(msg.secret_env_names))


def opened_session(opened: OpenedSession) -> tools_pb2.OpenSessionResponse:
    return tools_pb2.OpenSessionResponse(
        workspace_root=opened.workspace_root, warnings=opened.warnings,
        sandbox=tools_pb2.SandboxOptions(mode=opened.sandbox.mode, network=opened.sandbox.network),
        extra_roots=opened.extra_roots)


def tool_spec(spec: ToolSpecData) -> common_pb2.ToolSpec:
    return common_pb2.ToolSpec(name=spec.name, description=spec.description,
                               parameters_json=json.dumps(spec.parameters, sort_keys=True),
                               permission=spec.permission, parallel_safe=spec.parallel_safe, deferred=spec.deferred)


def chunk(item: Chunk) -> tools_pb2.CallToolResponse:
    return tools_pb2.CallToolResponse(chunk=common_pb2.ToolChunk(call_id=item.call_id, stream=item.stream,
                                                                 text=item.text))


def result(item: ToolCallResult) -> tools_pb2.CallToolResponse:
    error = (common_pb2.ErrorInfo(code=item.error_code, message=item.error_message, hint=item.error_hint)
             if item.error_code else None)
    return tools_pb2.CallToolResponse(result=common_pb2.ToolResult(
        call_id=item.call_id, tool=item.tool, ok=item.ok, output=item.output,
        data_json=json.dumps(item.data, sort_keys=True, default=str), error=error,
        duration_ms=item.duration_ms, limit_hit=item.limit_hit))


def egress_ask(ask: EgressAsk) -> tools_pb2.CallToolResponse:
    return tools_pb2.CallToolResponse(egress_ask=tools_pb2.EgressAsk(
        ask_id=ask.ask_id, host=ask.host, port=ask.port, method=ask.method, reason=ask.reason,
        allow_line=ask.allow_line))


GRANT_SCOPES = {tools_pb2.EGRESS_GRANT_SCOPE_ONCE: GrantScope.ONCE, tools_pb2.EGRESS_GRANT_SCOPE_SESSION: GrantScope.SESSION}


def grant(msg: tools_pb2.GrantEgressRequest) -> Grant:
    """The answer; any scope but once/session (unspecified included) refuses."""
    return Grant(GRANT_SCOPES.get(msg.scope, GrantScope.DENY), msg.reason)
