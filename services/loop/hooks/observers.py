"""Observe-only points fed by other parts' seams: subagent runs and compaction.

``subagent.start`` / ``subagent.end`` hang on the subagent manager's ``SubagentHook`` seam (it
calls its hooks synchronously around each child run); ``compact.before`` / ``compact.after``
follow the session's ``compaction_started`` / ``compaction_ended`` events. These points only
observe, so their hooks run in tasks of their own that never delay or change what they observe;
the tasks run one after another in the order their points happened (a child's ``subagent.end``
hooks start after its ``subagent.start`` hooks ended, not beside them), each point's hooks in
config order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, assert_never

from services.loop.core.events import Event
from services.loop.core.turn_events import (
    AcceptanceChecked,
    ApprovalRequested,
    ApprovalResolved,
    BufferRequested,
    CompactionEnded,
    CompactionStarted,
    ContextAssembled,
    Degraded,
    EventBody,
    EventsSkipped,
    HookRun,
    InputQueued,
    LedgerUpdated,
    MemoryRecalled,
    ModelStepFinished,
    Notice,
    PlanReport,
    PlanStepReceipt,
    PlanStepStarted,
    QuestionAsked,
    QuestionResolved,
    ReasoningDelta,
    SearchStalled,
    SkillCatalogChanged,
    SubagentFinished,
    SubagentStarted,
    SubagentTaskDone,
    TaskListUpdated,
    TextDelta,
    ToolChunk,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from services.loop.hooks.config import HookPoint
from services.loop.hooks.engine import HookEngine
from services.loop.subagents.manager import RunRecord
from services.loop.subagents.packet import SubagentPacket


def event_point(body: EventBody) -> tuple[HookPoint, dict[str, Any]] | None:
    """The observe-only point an event feeds and the payload its hooks get (every kind named: a new
    one fails mypy here until it says whether it feeds one)."""
    match body:
        case CompactionStarted():
            return HookPoint.COMPACT_BEFORE, {"estimated_tokens": body.estimated_tokens, "reason": body.reason}
        case CompactionEnded():
            return HookPoint.COMPACT_AFTER, {"estimated_before": body.estimated_before,
                                     "estimated_after": body.estimated_after}
        case (TurnStarted() | TextDelta() | ReasoningDelta() | ToolStarted() | ToolChunk() | ToolFinished()
              | ApprovalRequested() | ApprovalResolved() | QuestionAsked() | QuestionResolved() | BufferRequested() | TaskListUpdated()
              | MemoryRecalled() | Degraded() | SearchStalled() | ContextAssembled() | ModelStepFinished()
              | InputQueued() | Notice() | TurnFinished() | EventsSkipped() | HookRun() | SkillCatalogChanged()
              | AcceptanceChecked() | PlanStepStarted() | PlanStepReceipt() | PlanReport() | LedgerUpdated()
              | SubagentStarted() | SubagentFinished() | SubagentTaskDone()):
            return None  # turn.*, tool.* and step.* are the turn's own points (hooks/engine.py)
        case _:
            assert_never(body)


class ObservingHooks:
    """Runs the session's observe-only hooks off the turn's path."""

    def __init__(self, engine: HookEngine, emit: Callable[[EventBody], None]) -> None:
        self.engine = engine
        self.emit = emit
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: asyncio.Task[None] | None = None

    # -- subagents.manager.SubagentHook --

    def before_start(self, run: RunRecord) -> str | None:
        self._spawn(HookPoint.SUBAGENT_START, {"run_id": run.run_id, "name": run.name, "task": run.task,
                                       "background": run.background})
        return None

    def after_end(self, run: RunRecord, packet: SubagentPacket) -> None:
        self._spawn(HookPoint.SUBAGENT_END, {"run_id": run.run_id, "name": run.name, "status": packet.status,
                                     "exit_reason": packet.exit_reason, "files_changed": packet.files_changed,
                                     "iterations": packet.iterations, "elapsed_ms": packet.elapsed_ms})

    # -- an EventLog listener --

    def on_event(self, event: Event) -> None:
        found = event_point(event.body)
        if found is None or event.scope is not None:  # a child's compaction is the child's
            return
        self._spawn(*found)

    def _spawn(self, point: HookPoint, payload: dict[str, Any]) -> None:
        if not self.engine.settings.at(point):
            return
        task = asyncio.get_running_loop().create_task(self._observe_after(self._last, point, payload))
        self._last = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _observe_after(self, previous: asyncio.Task[None] | None, point: HookPoint,
                             payload: dict[str, Any]) -> None:
        if previous is not None:
            await asyncio.wait({previous})  # whatever it ended with; our own cancel still propagates
        await self.engine.observe(point, payload, self.emit)
