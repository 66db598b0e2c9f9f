"""The span tree of a traced session: session > turn > model step / tool call / compaction,
subagent runs nested under the tool call that started them.

Ids are derived, not random, so two exports of one trace are byte-identical and the
live exporter sends the very spans a later file export shows: the trace id is
sha256(session), a span id sha256(session|turn|span); a span inside a subagent's
run derives from its scope instead, sha256(<calling span id>|scope|span), so two
runs of the same subagent never collide. Attribute names follow the OpenTelemetry
GenAI semantic conventions (``gen_ai.*``, ``server.*``, ``error.type``; the version
followed is :data:`SEMCONV` and docs/traces.md), ours are ``ai_coding.*``.
Message bodies (the input, the answer, tool arguments and output) only with ``full``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Literal

from services.kernel import __version__
from services.kernel.egress_records import EgressRecord
from services.loop.tracing.egress import egress_attributes
from services.loop.tracing.report import CompactionFact, StepFact, Tokens, ToolFact, TurnReport

AttrValue = str | int | float | bool | list[str]
Kind = Literal["internal", "client"]
StatusCode = Literal["unset", "ok", "error"]
AGENT_NAME = "ai-coding"
SEMCONV = "open-telemetry/semantic-conventions-genai@024a4f944a1291fcb627c9c47da69e79868dd15e"
"""The GenAI semantic conventions these spans follow: client-inference.md at this commit, and
gen-ai-agent-spans.md (invoke_agent, execute_tool) as read at e8fc5751506258db1459d1bde47994e01dee922e."""
MCP_TOOL = "mcp_call"
_ARG = re.compile(r'"(server|tool)"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class SpanEvent:
    name: str
    ts: float
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass
class Span:
    trace_id: bytes
    span_id: bytes
    parent_id: bytes | None
    name: str
    kind: Kind
    start: float
    end: float
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    status: StatusCode = "unset"
    status_message: str = ""
    events: list[SpanEvent] = field(default_factory=list)


def _digest(text: str, size: int) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:size]


def trace_id(session_id: str) -> bytes:
    return _digest(session_id, 16)


def span_id(session_id: str, turn: int, key: str, scope: str = "", scope_parent: bytes | None = None) -> bytes:
    """A span's id: from session|turn|key, or inside a scope from its calling span."""
    if scope and scope_parent is not None:
        return _digest(f"{scope_parent.hex()}|{scope}|{key}", 8)
    return _digest(f"{session_id}|{turn}|{key}", 8)


def _usage_attrs(tokens: Tokens) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {"gen_ai.usage.input_tokens": tokens.prompt,
                                   "gen_ai.usage.output_tokens": tokens.completion}
    if tokens.cached is not None:
        attrs["gen_ai.usage.cache_read.input_tokens"] = tokens.cached
    if tokens.reasoning is not None:
        attrs["gen_ai.usage.reasoning.output_tokens"] = tokens.reasoning
    if tokens.cost_usd is not None:
        attrs["ai_coding.cost_usd"] = tokens.cost_usd
    return attrs


class _Ids:
    """Span ids of one turn, or of one scoped run inside it."""

    def __init__(self, session_id: str, turn: int, scope: str = "", parent: bytes | None = None) -> None:
        self.session_id, self.turn, self.scope, self.parent = session_id, turn, scope, parent

    def __call__(self, key: str) -> bytes:
        return span_id(self.session_id, self.turn, key, self.scope, self.parent)


def session_span(session_id: str, reports: list[TurnReport]) -> Span:
    """The root: one span over every turn of the session."""
    tokens = Tokens()
    for report in reports:
        tokens = tokens.add(report.tokens)
    attrs: dict[str, AttrValue] = {"gen_ai.conversation.id": session_id, "ai_coding.turns": len(reports),
                                   **_usage_attrs(tokens)}
    start = min((r.start for r in reports), default=0.0)
    end = max((r.end for r in reports), default=start)
    return Span(trace_id(session_id), span_id(session_id, 0, "session"), None, f"session {session_id[:8]}",
                "internal", start, end, attrs)


def turn_spans(report: TurnReport, parent: bytes | None, full: bool = False, ids: _Ids | None = None) -> list[Span]:
    """The turn's span (a subagent run's, with ``ids`` scoped) and everything under it."""
    sid = report.session_id
    ids = ids or _Ids(sid, report.turn)
    tid = trace_id(sid)
    own = ids("turn")
    called = next((step.call for step in report.steps if step.call.provider), None)
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME if not report.scope else "subagent",
        "gen_ai.agent.version": __version__, "gen_ai.conversation.id": sid, "ai_coding.turn": report.turn,
        "ai_coding.turn.status": report.status, "ai_coding.iterations": report.iterations,
        **_usage_attrs(report.tokens)}
    if called is not None:
        attrs["gen_ai.provider.name"] = called.provider
    attrs["gen_ai.request.model"] = called.request_model if called and called.request_model else report.model
    attrs["ai_coding.model_entry"] = report.model
    if report.status == "failed":
        attrs["error.type"] = _turn_error(report)
    if report.scope:
        attrs["ai_coding.scope"] = report.scope
    if report.reason:
        attrs["ai_coding.turn.reason"] = report.reason
    if report.queued:
        attrs["ai_coding.queued_inputs"] = len(report.queued)
    if full:
        attrs["ai_coding.input"], attrs["ai_coding.output"] = report.input, report.text
    status: StatusCode = "ok" if report.status == "completed" else ("error" if report.status == "failed" else "unset")
    events = [SpanEvent("ai_coding.degraded", d.ts, {"ai_coding.component": d.component, "ai_coding.reason": d.reason})
              for d in report.degraded]
    events += [SpanEvent("ai_coding.approval", a.ts, {"gen_ai.tool.name": a.tool, "gen_ai.tool.call.id": a.call_id,
                                                      "ai_coding.decision": a.decision, "ai_coding.source": a.source})
               for a in report.approvals]
    name = f"invoke_agent {attrs['gen_ai.agent.name']}"
    spans = [Span(tid, own, parent, name, "internal", report.start, report.end, attrs, status,
                  report.reason if status == "error" else "", sorted(events, key=lambda e: e.ts))]
    children: list[Span] = [_step_span(step, index, report, ids, own) for index, step in enumerate(report.steps)]
    children += [_compaction_span(c, index, report, ids, own) for index, c in enumerate(report.compactions)]
    for tool in report.tools:
        span = _tool_span(tool, report, ids, own, full)
        children.append(span)
        children += [_egress_span(fact, index, tool, report, ids, span.span_id) for index, fact in enumerate(tool.egress)]
        for run in tool.subagents:
            children += turn_spans(run, span.span_id, full, _Ids(sid, report.turn, run.scope, span.span_id))
    for run in report.subagents:
        children += turn_spans(run, own, full, _Ids(sid, report.turn, run.scope, own))
    return spans + children


def _turn_error(report: TurnReport) -> str:
    """A failed turn's ``error.type``: its failed model call's reason, else the reason's stable head."""
    failed = [step.call.error_type for step in report.steps if step.call.error_type]
    if failed:
        return failed[-1]
    head = report.reason.split(":", 1)[0].strip().replace(" ", "_")
    return head or "_OTHER"


def _step_span(step: StepFact, index: int, report: TurnReport, ids: _Ids, parent: bytes) -> Span:
    call = step.call
    model = call.request_model or report.model
    attrs: dict[str, AttrValue] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                   "gen_ai.conversation.id": report.session_id,
                                   "gen_ai.response.finish_reasons": [step.finish_reason] if step.finish_reason else [],
                                   "ai_coding.step": step.number, "ai_coding.latency_ms": step.latency_ms,
                                   **_usage_attrs(step.tokens)}
    if call.provider:
        attrs["gen_ai.provider.name"] = call.provider
    if call.stream:
        attrs["gen_ai.request.stream"] = True
    if call.server_address:
        attrs["server.address"], attrs["server.port"] = call.server_address, call.server_port
    if call.response_model:
        attrs["gen_ai.response.model"] = call.response_model
    if call.response_id:
        attrs["gen_ai.response.id"] = call.response_id
    if call.stream and call.first_chunk_ms:
        attrs["gen_ai.response.time_to_first_chunk"] = call.first_chunk_ms / 1000.0
    status: StatusCode = "unset"
    key = f"step-{step.number}"
    if call.error_type:
        attrs["error.type"], status, key = call.error_type, "error", f"step-{step.number}-failed-{index}"
    return Span(trace_id(report.session_id), ids(key), parent, f"chat {model}".strip(),
                "client", step.start, step.end, attrs, status, call.error_type)


def mcp_target(arguments: str) -> tuple[str, str]:
    """``(server, tool)`` named by an ``mcp_call``'s arguments (a preview may be cut: read by pattern)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return str(value.get("server", "")), str(value.get("tool", ""))
    found = dict(_ARG.findall(arguments))
    return found.get("server", ""), found.get("tool", "")


def _tool_span(tool: ToolFact, report: TurnReport, ids: _Ids, parent: bytes, full: bool) -> Span:
    attrs: dict[str, AttrValue] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.tool,
                                   "gen_ai.tool.call.id": tool.call_id, "gen_ai.tool.type": "function",
                                   "ai_coding.tool.status": tool.status, "ai_coding.duration_ms": tool.duration_ms}
    name = tool.tool
    if tool.tool == MCP_TOOL:
        server, mcp_tool = mcp_target(tool.arguments)
        if mcp_tool:
            name = attrs["gen_ai.tool.name"] = mcp_tool
        attrs.update({"gen_ai.tool.type": "extension", "mcp.method.name": "tools/call", "ai_coding.tool.via": MCP_TOOL})
        if server:
            attrs["ai_coding.mcp.server"] = server
    if tool.error_code:
        attrs["error.type"] = attrs["ai_coding.error.code"] = tool.error_code
    if full:
        attrs["gen_ai.tool.call.arguments"], attrs["gen_ai.tool.call.result"] = tool.arguments, tool.output
    status: StatusCode = "ok" if tool.ok else ("error" if tool.ok is False else "unset")
    message = tool.error_message if status == "error" and full else tool.error_code
    return Span(trace_id(report.session_id), ids(f"tool-{tool.call_id}"), parent, f"execute_tool {name}",
                "internal", tool.start, tool.end, attrs, status, message if status == "error" else "")


def _egress_span(fact: EgressRecord, index: int, tool: ToolFact, report: TurnReport, ids: _Ids, parent: bytes) -> Span:
    """One request of the tool call's sandboxed command through the egress proxy (a client span)."""
    start = fact.started or tool.start
    status: StatusCode = "unset" if fact.allowed else "error"
    return Span(trace_id(report.session_id), ids(f"egress-{tool.call_id}-{index}"), parent, fact.name, "client",
                start, start + fact.duration_ms / 1000.0, egress_attributes(fact), status,
                fact.reason if status == "error" else "")


def _compaction_span(fact: CompactionFact, index: int, report: TurnReport, ids: _Ids, parent: bytes) -> Span:
    events = []
    for name, layer in fact.rows():
        attrs: dict[str, AttrValue] = {"ai_coding.layer": name, "ai_coding.triggered": layer is not None}
        if layer is not None:
            attrs.update({"ai_coding.removed": layer.removed, "ai_coding.rewritten": layer.rewritten,
                          "ai_coding.skipped": layer.skipped, "ai_coding.before_tokens": layer.before_tokens,
                          "ai_coding.after_tokens": layer.after_tokens})
        events.append(SpanEvent("ai_coding.compaction.layer", fact.end, attrs))
    attrs = {"ai_coding.compaction.reason": fact.reason, "ai_coding.estimated_before": fact.estimated_before,
             "ai_coding.estimated_after": fact.estimated_after}
    return Span(trace_id(report.session_id), ids(f"compaction-{index + 1}"), parent, "compaction", "internal",
                fact.start, fact.end, attrs, events=events)


def session_tree(session_id: str, reports: list[TurnReport], full: bool = False) -> list[Span]:
    """Every span of the session, root first, then each turn's tree in turn order."""
    root = session_span(session_id, reports)
    spans = [root]
    for report in sorted(reports, key=lambda r: r.turn):
        spans += turn_spans(report, root.span_id, full)
    return spans
