"""A turn's trace lines as typed facts: steps, tool calls, compaction, degradations, approvals.

Lines that carry a ``scope`` (a subagent's run id) and a ``parent_call_id`` (the
tool call that started it) belong to that subagent's own run: they become a
nested :class:`TurnReport` under the calling tool, scopes inside scopes included.
Unknown kinds are ignored, so an older reader keeps working on newer traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.kernel.egress_records import EgressRecord, records_from
from services.loop.policy.codes import REFUSAL_CODES
from services.loop.tracing.store import SessionRef, read_lines

LAYERS = ("L1", "L2", "L3", "L4")


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _opt_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass(frozen=True)
class Tokens:
    """Token counts; ``cached`` and ``cost_usd`` stay None where the provider (or a price) gave none."""

    prompt: int = 0
    completion: int = 0
    cached: int | None = None
    cost_usd: float | None = None
    reasoning: int | None = None

    @staticmethod
    def from_usage(usage: Any) -> Tokens:
        if not isinstance(usage, dict):
            return Tokens()
        cost = usage.get("cost_usd")
        return Tokens(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
                      _opt_int(usage.get("cached_tokens")), None if cost is None else _float(cost),
                      _opt_int(usage.get("reasoning_tokens")))

    def add(self, other: Tokens) -> Tokens:
        def opt(a: Any, b: Any) -> Any:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Tokens(self.prompt + other.prompt, self.completion + other.completion,
                      opt(self.cached, other.cached), opt(self.cost_usd, other.cost_usd),
                      opt(self.reasoning, other.reasoning))


@dataclass(frozen=True)
class CallFact:
    """What the model client observed of one call (empty strings / 0: not recorded, older traces)."""

    provider: str = ""
    request_model: str = ""
    server_address: str = ""
    server_port: int = 0
    stream: bool = False
    response_model: str = ""
    response_id: str = ""
    first_chunk_ms: float = 0.0
    error_type: str = ""

    @staticmethod
    def from_line(raw: Any) -> CallFact:
        if not isinstance(raw, dict):
            return CallFact()
        return CallFact(str(raw.get("provider", "")), str(raw.get("request_model", "")),
                        str(raw.get("server_address", "")), _int(raw.get("server_port")), raw.get("stream") is True,
                        str(raw.get("response_model", "")), str(raw.get("response_id", "")),
                        _float(raw.get("first_chunk_ms")), str(raw.get("error_type", "")))


@dataclass
class StepFact:
    number: int
    start: float
    end: float
    latency_ms: float
    tokens: Tokens
    finish_reason: str
    call: CallFact = field(default_factory=CallFact)


@dataclass
class ToolFact:
    call_id: str
    tool: str
    title: str
    start: float
    end: float
    ok: bool | None = None
    """None while unfinished."""
    error_code: str = ""
    error_message: str = ""
    duration_ms: float = 0.0
    arguments: str = ""
    output: str = ""
    subagents: list[TurnReport] = field(default_factory=list)
    egress: list[EgressRecord] = field(default_factory=list)
    """The sandboxed command's requests through the egress proxy (services/loop/tracing/egress.py)."""

    @property
    def refused(self) -> bool:
        """Refused before it ran (a guard, the permission table or the user)."""
        return self.ok is False and self.error_code in REFUSAL_CODES

    @property
    def status(self) -> str:
        if self.ok is None:
            return "unfinished"
        return "ok" if self.ok else ("refused" if self.refused else "failed")


@dataclass(frozen=True)
class LayerFact:
    name: str
    removed: int
    rewritten: int
    skipped: int
    before_tokens: int
    after_tokens: int


@dataclass
class CompactionFact:
    start: float
    end: float
    reason: str = ""
    estimated_before: int = 0
    estimated_after: int = 0
    layers: list[LayerFact] = field(default_factory=list)

    def layer(self, name: str) -> LayerFact | None:
        """The layer's stats, or None when it did not run in this compaction."""
        return next((layer for layer in self.layers if layer.name == name), None)

    def rows(self) -> list[tuple[str, LayerFact | None]]:
        """L1..L4 in order (None: not triggered), then any other layer that ran (e.g. fallback)."""
        extra = [(layer.name, layer) for layer in self.layers if layer.name not in LAYERS]
        return [(name, self.layer(name)) for name in LAYERS] + extra


@dataclass(frozen=True)
class DegradedFact:
    ts: float
    component: str
    reason: str


@dataclass
class ApprovalFact:
    ts: float
    request_id: str
    tool: str
    call_id: str
    decision: str = ""
    source: str = ""


@dataclass
class TurnReport:
    """One turn (or, with ``scope``, one subagent run inside it)."""

    session_id: str
    turn: int
    scope: str = ""
    start: float = 0.0
    end: float = 0.0
    status: str = "unfinished"
    reason: str = ""
    model: str = ""
    input: str = ""
    text: str = ""
    tokens: Tokens = field(default_factory=Tokens)
    iterations: int = 0
    duration_ms: float = 0.0
    steps: list[StepFact] = field(default_factory=list)
    tools: list[ToolFact] = field(default_factory=list)
    compactions: list[CompactionFact] = field(default_factory=list)
    degraded: list[DegradedFact] = field(default_factory=list)
    approvals: list[ApprovalFact] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    subagents: list[TurnReport] = field(default_factory=list)
    """Scoped runs whose calling tool is not in this trace."""


class _Builder:
    def __init__(self, report: TurnReport) -> None:
        self.report = report
        self.tools: dict[str, ToolFact] = {}
        self.approvals: dict[str, ApprovalFact] = {}
        self.compaction: CompactionFact | None = None

    def add(self, line: dict[str, Any]) -> None:
        r, kind, ts = self.report, line.get("kind"), _float(line.get("ts"))
        r.start = r.start or ts
        r.end = max(r.end, ts)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(line, ts)

    def _on_turn_started(self, line: dict[str, Any], ts: float) -> None:
        self.report.start, self.report.model, self.report.input = ts, str(line.get("model", "")), str(
            line.get("input", ""))

    def _on_model_step_finished(self, line: dict[str, Any], ts: float) -> None:
        latency = _float(line.get("latency_ms"))
        self.report.steps.append(StepFact(_int(line.get("step")) or len(self.report.steps) + 1,
                                          ts - latency / 1000.0, ts, latency, Tokens.from_usage(line.get("usage")),
                                          str(line.get("finish_reason", "")), CallFact.from_line(line.get("call"))))

    def _on_tool_started(self, line: dict[str, Any], ts: float) -> None:
        call_id = str(line.get("call_id", ""))
        tool = ToolFact(call_id, str(line.get("tool", "")), str(line.get("title", "")), ts, ts,
                        arguments=str(line.get("arguments_json", "")))
        self.tools[call_id] = tool
        self.report.tools.append(tool)

    def _on_tool_finished(self, line: dict[str, Any], ts: float) -> None:
        result = line.get("result")
        if not isinstance(result, dict):
            result = {}
        call_id = str(result.get("call_id", ""))
        duration = _float(result.get("duration_ms"))
        tool = self.tools.get(call_id)
        if tool is None:  # refused before it started, or its start was not recorded
            tool = ToolFact(call_id, str(result.get("tool", "")), "", ts - duration / 1000.0, ts)
            self.tools[call_id] = tool
            self.report.tools.append(tool)
        tool.end, tool.ok, tool.duration_ms = ts, bool(result.get("ok", False)), duration
        tool.error_code, tool.error_message = str(result.get("error_code", "")), str(result.get("error_message", ""))
        tool.output = str(result.get("output", ""))
        tool.egress = records_from(result.get("data"))

    def _on_approval_requested(self, line: dict[str, Any], ts: float) -> None:
        request_id = str(line.get("request_id", ""))
        fact = ApprovalFact(ts, request_id, str(line.get("tool", "")), str(line.get("call_id", "")))
        self.approvals[request_id] = fact
        self.report.approvals.append(fact)

    def _on_approval_resolved(self, line: dict[str, Any], ts: float) -> None:
        fact = self.approvals.get(str(line.get("request_id", "")))
        if fact is not None:
            fact.decision, fact.source = str(line.get("decision", "")), str(line.get("source", ""))

    def _on_degraded(self, line: dict[str, Any], ts: float) -> None:
        self.report.degraded.append(DegradedFact(ts, str(line.get("component", "")), str(line.get("reason", ""))))

    def _on_input_queued(self, line: dict[str, Any], ts: float) -> None:
        self.report.queued.append(str(line.get("input", "")))

    def _on_compaction_started(self, line: dict[str, Any], ts: float) -> None:
        self.compaction = CompactionFact(ts, ts, str(line.get("reason", "")))

    def _on_compaction_ended(self, line: dict[str, Any], ts: float) -> None:
        fact = self.compaction or CompactionFact(ts, ts)
        self.compaction = None
        fact.end = ts
        fact.estimated_before, fact.estimated_after = _int(line.get("estimated_before")), _int(
            line.get("estimated_after"))
        layers = line.get("layers")
        if not isinstance(layers, list):
            layers = []
        fact.layers = [LayerFact(str(x.get("name", "")), _int(x.get("removed")), _int(x.get("rewritten")),
                                 _int(x.get("skipped")), _int(x.get("before_tokens")), _int(x.get("after_tokens")))
                       for x in layers if isinstance(x, dict)]
        self.report.compactions.append(fact)

    def _on_subagent_started(self, line: dict[str, Any], ts: float) -> None:
        self.report.start, self.report.input = ts, str(line.get("task", ""))

    def _on_subagent_finished(self, line: dict[str, Any], ts: float) -> None:
        """A child run's end (its own turn_finished is not relayed): status, tokens, time, steps."""
        r = self.report
        r.end, r.status, r.reason = ts, str(line.get("status", "")), str(line.get("exit_reason", ""))
        r.tokens, r.duration_ms = Tokens.from_usage(line.get("usage")), _float(line.get("elapsed_ms"))
        r.iterations = len(r.steps)

    def _on_turn_finished(self, line: dict[str, Any], ts: float) -> None:
        r = self.report
        r.end, r.status, r.reason = ts, str(line.get("status", "")), str(line.get("reason", ""))
        r.text, r.tokens = str(line.get("text", "")), Tokens.from_usage(line.get("usage"))
        r.iterations, r.duration_ms = _int(line.get("iterations")), _float(line.get("duration_ms"))


def turn_report(session_id: str, turn: int, lines: list[dict[str, Any]]) -> TurnReport:
    """The facts of one turn file, subagent runs nested under the calls that started them."""
    builders: dict[str, _Builder] = {}
    parents: dict[str, str] = {}
    for line in sorted(lines, key=lambda item: _int(item.get("seq"))):
        scope = str(line.get("scope", "") or "")
        if scope not in builders:
            builders[scope] = _Builder(TurnReport(session_id, turn, scope))
            parents[scope] = str(line.get("parent_call_id", "") or "")
        builders[scope].add(line)
    main = builders.pop("", None) or _Builder(TurnReport(session_id, turn))
    tools = {call_id: tool for b in [main, *builders.values()] for call_id, tool in b.tools.items()}
    for scope, builder in builders.items():
        report = builder.report
        caller = tools.get(parents[scope])
        (caller.subagents if caller is not None and caller.call_id else main.report.subagents).append(report)
    return main.report


def session_reports(ref: SessionRef) -> list[TurnReport]:
    """Every turn file of a session as a report, in turn order."""
    return [turn_report(ref.session_id, number, read_lines(path)) for number, path in ref.turn_files.items()]
