"""Observe-only points fed by other parts' seams: subagent runs and compaction.

``subagent.start`` / ``subagent.end`` hang on the subagent manager's ``SubagentHook`` seam (it
calls its hooks synchronously around each child run); ``compact.before`` / ``compact.after``
follow the session's ``compaction_started`` / ``compaction_ended`` events. These points only
observe, so each run of their hooks is a task of its own (serial per point, in config order)
that never delays or changes what it observes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from services.loop.core.events import Event
from services.loop.core.turn_events import EventBody
from services.loop.hooks.engine import HookEngine
from services.loop.subagents.manager import RunRecord
from services.loop.subagents.packet import SubagentPacket

# Event kind -> (point, the event fields its hooks get).
EVENT_POINTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "compaction_started": ("compact.before", ("estimated_tokens", "reason")),
    "compaction_ended": ("compact.after", ("estimated_before", "estimated_after")),
}


class ObservingHooks:
    """Runs the session's observe-only hooks off the turn's path."""

    def __init__(self, engine: HookEngine, emit: Callable[[EventBody], None]) -> None:
        self.engine = engine
        self.emit = emit
        self._tasks: set[asyncio.Task[None]] = set()

    # -- subagents.manager.SubagentHook --

    def before_start(self, run: RunRecord) -> str | None:
        self._spawn("subagent.start", {"run_id": run.run_id, "name": run.name, "task": run.task,
                                       "background": run.background})
        return None

    def after_end(self, run: RunRecord, packet: SubagentPacket) -> None:
        self._spawn("subagent.end", {"run_id": run.run_id, "name": run.name, "status": packet.status,
                                     "exit_reason": packet.exit_reason, "files_changed": packet.files_changed,
                                     "iterations": packet.iterations, "elapsed_ms": packet.elapsed_ms})

    # -- an EventLog listener --

    def on_event(self, event: Event) -> None:
        found = EVENT_POINTS.get(event.body.kind)
        if found is None or event.scope is not None:  # a child's compaction is the child's
            return
        point, names = found
        self._spawn(point, {name: getattr(event.body, name) for name in names})

    def _spawn(self, point: str, payload: dict[str, Any]) -> None:
        if not self.engine.settings.at(point):
            return
        task = asyncio.get_running_loop().create_task(self.engine.observe(point, payload, self.emit))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
