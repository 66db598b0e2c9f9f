"""Synthetic traces written through the real TraceWriter (events in, files out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.loop.core.approvals import Decision
from services.loop.core.events import Event
from services.loop.core.ports import ToolOutcome, Usage
from services.loop.core.turn_events import (
    ApprovalRequested,
    ApprovalResolved,
    CompactionEnded,
    CompactionStarted,
    Degraded,
    EventBody,
    InputQueued,
    LayerStat,
    ModelStepFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from services.loop.policy.turn import Status
from services.loop.tracing.writer import TraceWriter


@dataclass
class Recorder:
    """Feeds events to a TraceWriter with chosen timestamps (one second apart by default)."""

    workspace: Path
    session_id: str
    ts: float = 1_700_000_000.0
    seq: int = 0
    writer: TraceWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = TraceWriter(str(self.workspace), self.session_id)

    def emit(self, turn: int, body: EventBody, extra: dict[str, Any] | None = None, step: float = 1.0) -> None:
        self.seq += 1
        self.ts += step
        self.writer.record(Event(self.seq, self.session_id, turn, self.ts, body))

    def turn(self, number: int, *, prompt: int = 100, completion: int = 10, cached: int | None = 60,
             tools: tuple[tuple[str, str, bool, str], ...] | list[tuple[str, str, bool, str]] = (), degraded: str = "", queued: str = "",
             compaction: list[LayerStat] | None = None, denied: str = "", text: str = "done") -> None:
        """A turn: optional compaction, one model step with ``tools`` (call id, tool, ok, error code),
        a denied approval, a degradation, queued input, then a final step."""
        self.emit(number, TurnStarted(number, f"question {number} <b>", "fake-model"))
        if compaction is not None:
            self.emit(number, CompactionStarted(5000, "over the window"))
            self.emit(number, CompactionEnded(compaction, 5000, 2000))
        if degraded:
            self.emit(number, Degraded(degraded, "memory service unreachable"))
        usage = Usage(prompt, completion, prompt + completion, cached_tokens=cached)
        self.emit(number, ModelStepFinished(1, usage, 250.0, "tool_calls" if tools else "stop"))
        if denied:
            self.emit(number, ApprovalRequested("r1", denied, "bash", "{}", "rm -rf x", "runs a command"))
            self.emit(number, ApprovalResolved("r1", Decision.DENY, "user"))
        for call_id, tool, ok, code in tools:
            if code not in ("denied_by_user",):
                self.emit(number, ToolStarted(call_id, tool, '{"path": "a.txt"}', f"Reading · {tool}"))
            self.emit(number, TextDelta("x"))
            self.emit(number, ToolFinished(ToolOutcome(call_id, tool, ok, "output of " + tool, error_code=code,
                                                       error_message="it broke" if code else "",
                                                       duration_ms=12.0)))
        if queued:
            self.emit(number, InputQueued(queued, 1))
        if tools:
            self.emit(number, ModelStepFinished(2, Usage(prompt, completion, prompt + completion, cached_tokens=cached),
                                                300.0, "stop"))
        steps = 2 if tools else 1
        total = Usage(prompt * steps, completion * steps, (prompt + completion) * steps,
                      cached_tokens=None if cached is None else cached * steps)
        self.emit(number, TurnFinished(Status.COMPLETED, text, "", total, steps, 1500.0, ""))
        self.writer.end_turn()  # as the runtime's end_of_turn does once the clients have the event
