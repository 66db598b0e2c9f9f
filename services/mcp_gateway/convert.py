"""Protobuf <-> domain for the gateway (protobuf goes no further than this module)."""

from __future__ import annotations

import json

from ai_coding.v1 import common_pb2, mcp_gateway_pb2

from services.mcp_gateway.catalog import ToolEntry
from services.mcp_gateway.domain import CallOutcome, Progress, ServerView, State
from services.mcp_gateway.elicitation import ElicitAsk
from services.mcp_gateway.permissions import mcp_permission
from services.mcp_gateway.settings import ServerSettings

_STATE = {
    State.CONNECTING: mcp_gateway_pb2.SERVER_STATE_CONNECTING,
    State.CONNECTED: mcp_gateway_pb2.SERVER_STATE_CONNECTED,
    State.RECONNECTING: mcp_gateway_pb2.SERVER_STATE_RECONNECTING,
    State.FAILED: mcp_gateway_pb2.SERVER_STATE_FAILED,
    State.NEEDS_AUTH: mcp_gateway_pb2.SERVER_STATE_NEEDS_AUTH,
    State.DISABLED: mcp_gateway_pb2.SERVER_STATE_DISABLED,
}


def status_to_proto(view: ServerView) -> mcp_gateway_pb2.ServerStatus:
    """ServerView -> ServerStatus."""
    return mcp_gateway_pb2.ServerStatus(
        name=view.name,
        type=view.type,
        state=_STATE[view.state],
        reason=view.reason,
        tool_count=view.tool_count,
        attempts=view.attempts,
        next_retry_in_s=view.next_retry_in_s,
        auto_approve=view.auto_approve,
        degraded=view.degraded,
        degraded_reason=view.degraded_reason,
        log=[mcp_gateway_pb2.ServerLogLine(level=line.level, logger=line.logger, text=line.text) for line in view.log],
        session_id=view.session_id,
    )


def entry_to_proto(entry: ToolEntry, settings: ServerSettings | None) -> mcp_gateway_pb2.CatalogEntry:
    """ToolEntry -> CatalogEntry, with the permission level the loop's gate starts from."""
    return mcp_gateway_pb2.CatalogEntry(
        server=entry.server,
        tool=entry.tool,
        qualified_name=entry.qualified_name,
        description=entry.description,
        input_schema_json=json.dumps(dict(entry.input_schema), ensure_ascii=False, sort_keys=True),
        permission=mcp_permission(settings, entry.tool, entry.read_only) if settings is not None else "warn",
    )


def elicitation_to_proto(ask: ElicitAsk) -> mcp_gateway_pb2.McpCallToolResponse:
    """A server's question to the user -> an McpElicitation item of the call's stream."""
    return mcp_gateway_pb2.McpCallToolResponse(elicitation=mcp_gateway_pb2.McpElicitation(
        request_id=ask.request_id, server=ask.server, message=ask.message, mode=ask.mode,
        requested_schema_json=json.dumps(dict(ask.schema)), url=ask.url))


def progress_to_proto(call_id: str, progress: Progress) -> mcp_gateway_pb2.McpCallToolResponse:
    """One progress notification -> a ToolChunk(stream="progress") item."""
    if progress.message:
        text = progress.message
    elif progress.total:
        text = f"{progress.progress:g}/{progress.total:g}"
    else:
        text = f"{progress.progress:g}"
    chunk = common_pb2.ToolChunk(call_id=call_id, stream="progress", text=text, progress=progress.progress,
                                 total=progress.total or 0.0)
    return mcp_gateway_pb2.McpCallToolResponse(chunk=chunk)


def outcome_to_proto(call_id: str, qualified: str, outcome: CallOutcome) -> mcp_gateway_pb2.McpCallToolResponse:
    """CallOutcome -> the stream's final ToolResult item."""
    return mcp_gateway_pb2.McpCallToolResponse(result=result_to_proto(call_id, qualified, outcome))


def result_to_proto(call_id: str, qualified: str, outcome: CallOutcome) -> common_pb2.ToolResult:
    """CallOutcome -> ToolResult (tool calls, resources and prompts alike)."""
    result = common_pb2.ToolResult(
        call_id=call_id,
        tool=qualified,
        ok=outcome.ok,
        output=outcome.output,
        data_json=json.dumps(dict(outcome.data), ensure_ascii=False) if outcome.data else "{}",
        duration_ms=outcome.duration_ms,
        limit_hit=outcome.limit_hit,
    )
    if not outcome.ok:
        result.error.CopyFrom(common_pb2.ErrorInfo(code=outcome.error_code, message=outcome.error_message,
                                                   hint=outcome.hint))
    return result
