"""The runs table of one session: its rows, /tasks and ``/tasks stop``, a child's approvals.

The table keeps ``MAX_ROWS`` rows (finished ones pruned first) and lives in memory only;
the runs a dead loop left running come from their markers (``records.collect_lost``) and
are listed as lost.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.loop.core.turn_events import SubagentScope
from services.loop.subagents import worktree
from services.loop.subagents.packet import PacketStatus, SubagentPacket
from services.loop.turn.pipeline import Turn

MAX_ROWS = 200


class SubagentHook(Protocol):
    """Called around every run (hooks' ``subagent.start`` / ``subagent.end``)."""

    def before_start(self, run: RunRecord) -> str | None:
        """A reason to refuse the run, or None."""
        ...

    def after_end(self, run: RunRecord, packet: SubagentPacket) -> None: ...


@dataclass
class RunRecord:
    """One row of the runs table."""

    run_id: str
    name: str
    task: str
    background: bool
    call_id: str
    started: float = field(default_factory=time.time)
    status: PacketStatus | None = None
    """How the run ended; None while it runs."""
    ended: float = 0.0
    tokens: int = 0
    stopping: bool = False
    """``/tasks stop`` asked for it; the status changes when the child has actually ended."""
    packet: SubagentPacket | None = None
    turn: Turn | None = field(default=None, repr=False)
    tree: worktree.Worktree | None = field(default=None, repr=False)
    isolation_note: str = ""
    task_handle: asyncio.Task[SubagentPacket] | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        return self.status is not None

    def shown_status(self) -> str:
        """The status /tasks shows: the final one, else ``stopping`` or ``running``."""
        if self.status is not None:
            return str(self.status)
        return "stopping" if self.stopping else "running"

    def elapsed_seconds(self) -> float:
        return (self.ended or time.time()) - self.started

    def scope(self) -> SubagentScope:
        return SubagentScope(run_id=self.run_id, name=self.name, call_id=self.call_id, task=self.task[:200])


@dataclass(frozen=True)
class SubagentLimits:
    timeout_seconds: float
    max_iterations: int
    token_budget: int
    max_parallel: int
    isolation: bool = True


class RunsTable:
    """The rows of one session's runs, newest last."""

    def __init__(self, lost: list[dict[str, Any]]) -> None:
        self.runs: OrderedDict[str, RunRecord] = OrderedDict()
        self.lost = lost
        """Runs a dead loop left running (from their markers): listed, never resumed."""

    def add(self, run: RunRecord) -> None:
        self.runs[run.run_id] = run
        while len(self.runs) > MAX_ROWS:
            oldest = next((rid for rid, r in self.runs.items() if r.finished), None)
            if oldest is None:
                break
            del self.runs[oldest]

    def running_count(self) -> int:
        return sum(1 for r in self.runs.values() if not r.finished)

    def running(self) -> bool:
        """Whether a child still runs (a stream following the session stays open until none does)."""
        return self.running_count() > 0

    def find(self, prefix: str) -> RunRecord | None:
        matches = [r for rid, r in self.runs.items() if rid.startswith(prefix)]
        return matches[0] if len(matches) == 1 else None

    def stop(self, run_id: str) -> bool:
        """Cancel a running child (its packet says cancelled; a background run still gets its event)."""
        run = self.runs.get(run_id)
        if run is None or run.finished or run.stopping or run.task_handle is None:
            return False
        run.stopping = True
        if run.turn is not None:
            run.turn.stop_reason = "interrupted"
        run.task_handle.cancel()
        return True

    def forget_since(self, since: float) -> int:
        """The conversation went back to before ``since``: children started since belong to turns
        that are gone; stop the ones still running and drop them all from the table. Returns how many."""
        doomed = [r for r in self.runs.values() if r.started >= since]
        for run in doomed:
            self.stop(run.run_id)
            del self.runs[run.run_id]
        return len(doomed)

    def resolve(self, resolution: Any) -> bool:
        """Settle a child's approval (its request id names the run)."""
        for run in self.runs.values():
            if run.turn is not None and not run.finished and run.turn.pending.resolve(resolution):
                return True
        return False

    async def stop_all(self, grace: float = 5.0) -> None:
        """Stop every running child and wait up to ``grace`` seconds for them to end."""
        for run in list(self.runs.values()):
            self.stop(run.run_id)
        handles = [r.task_handle for r in self.runs.values() if r.task_handle is not None]
        if handles:
            await asyncio.wait(handles, timeout=grace)

    def command(self, args: str) -> tuple[str, str]:
        """``/tasks`` (list) and ``/tasks stop ID``: the text and its JSON."""
        words = args.split()
        if words and words[0] == "stop":
            if len(words) != 2:
                return "usage: /tasks stop <run id>", json.dumps({"error": "usage"})
            run = self.find(words[1])
            if run is None:
                return f"no run {words[1]!r} (see /tasks)", json.dumps({"error": "unknown_run"})
            if not self.stop(run.run_id):
                return f"run {run.run_id} already ended ({run.shown_status()})", json.dumps({"error": "finished"})
            return f"stopping run {run.run_id} ({run.name})", json.dumps({"stopped": run.run_id})
        if words:
            return "usage: /tasks  or  /tasks stop <run id>", json.dumps({"error": "usage"})
        return self._listing()

    def _listing(self) -> tuple[str, str]:
        rows: list[dict[str, Any]] = [
            {"run_id": r.run_id, "name": r.name, "status": r.shown_status(), "background": r.background,
             "elapsed_seconds": round(r.elapsed_seconds(), 1), "tokens": r.tokens} for r in self.runs.values()]
        lines = [f"{r['run_id']}  {r['name'][:30]:<30}  {r['status']:<14} {r['elapsed_seconds']:>7.1f}s "
                 f"{r['tokens']:>8} tok" for r in rows]
        for lost in self.lost:
            lines.append(f"{lost['run_id']}  {str(lost.get('name', ''))[:30]:<30}  lost: the loop restarted while "
                         "it ran (runs are not resumed)")
        if not lines:
            lines = ["no subagent runs in this session"]
        return "\n".join(lines), json.dumps({"runs": rows, "lost": self.lost})
