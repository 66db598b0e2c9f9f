"""A running turn's one status line: which step, what it waits for and for how long, the keys that
interrupt, and what still runs in the background (subagent children and job_start jobs).

:class:`Progress` is pure state fed with the turn's events and a clock; :func:`Progress.line`
says what to show now. The REPL puts the line above its prompt and redraws it every second;
``run`` on a terminal draws it with :class:`TerminalTicker` as a transient last line that is
erased before anything else is printed (without a terminal nothing is drawn).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from clients.cli import views

RUN_KEYS = "Ctrl-C interrupts"
REPL_KEYS = "Esc stops the tools · Ctrl-C aborts the turn"
# Shown once a wait is this long: a call that ends sooner draws nothing (no flicker on fast tools).
SHOW_AFTER_SECONDS = 1.0
# The tools whose result describes a background job (job_id, name, status, runtime_s).
JOB_TOOLS = frozenset({"job_start", "job_output", "job_stop"})
# Background entries named on the line; the rest are counted.
BACKGROUND_SHOWN = 3


def elapsed(seconds: float) -> str:
    """'4s', '1m05s', '1h02m' (whole seconds: the line ticks once a second)."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


@dataclass
class _Call:
    title: str
    started: float


@dataclass(frozen=True)
class JobState:
    """A background job as the tools service describes it (job_start's result, /jobs' rows)."""

    job_id: str
    title: str
    status: str
    """running, exited or stopped (job_stop)."""
    runtime_s: float = 0.0
    exit_code: int | None = None
    refused: tuple[str, ...] = ()
    """Hosts the sandbox's proxy refused it ("host:port"): a job cannot ask, the user allows them."""

    @property
    def running(self) -> bool:
        """The job's process has not ended."""
        return self.status == "running"

    def ended_line(self) -> str:
        """'⟲ background job job-1 (npm test) exited 0 · 3.1s'."""
        code = f" {self.exit_code}" if self.exit_code is not None and self.status == "exited" else ""
        line = f"⟲ background job {self.job_id} ({self.title}) {self.status}{code} · {self.runtime_s:.1f}s"
        if self.refused:
            line += (f" · network refused: {', '.join(self.refused)} "
                     f"(/network allow {self.refused[0].removesuffix(':443')} allows it for this session)")
        return line

    @classmethod
    def of(cls, job: object) -> JobState | None:
        """From one ``describe()`` dict; ``None`` when it is not one."""
        if not isinstance(job, dict) or not isinstance(job.get("job_id"), str):
            return None
        runtime = job.get("runtime_s")
        code = job.get("exit_code")
        title = str(job.get("name") or job.get("command") or job["job_id"])
        refused = tuple(str(t) for t in job.get("egress_refused") or () if isinstance(t, str))
        return cls(job["job_id"], title, str(job.get("status") or "running"),
                   float(runtime) if isinstance(runtime, int | float) else 0.0, code if isinstance(code, int) else None,
                   refused)


def job_of_result(result: views.ToolResult) -> JobState | None:
    """The job a finished job_start / job_output / job_stop call describes."""
    if not result.ok or result.tool not in JOB_TOOLS:
        return None
    try:
        return JobState.of(json.loads(result.data_json or "{}"))
    except ValueError:
        return None


@dataclass
class Progress:
    """What the running turn is doing, from its events (times are ``time.monotonic()`` seconds)."""

    keys: str = RUN_KEYS
    turn_started: float | None = None
    steps_done: int = 0
    """Model steps finished this turn: running calls belong to the last one, a wait to the next."""
    waiting_since: float | None = None
    """Since when the turn waits for the model (no call running)."""
    calls: dict[str, _Call] = field(default_factory=dict)
    background: dict[str, _Call] = field(default_factory=dict)
    """Background subagent runs by run id."""
    jobs: dict[str, _Call] = field(default_factory=dict)
    """Background jobs (job_start) still running, by job id."""
    asking: bool = False
    """An approval or a question waits for the user: the prompt says so, not this line."""

    def feed(self, event: views.Event, now: float) -> None:
        """Take one event of the session."""
        body = event.body
        if event.scope is not None:
            if isinstance(body, views.SubagentStarted) and body.background:
                self.background[body.run_id] = _Call(event.scope.name or body.run_id, now)
            elif isinstance(body, views.ApprovalRequested | views.QuestionAsked):
                self.asking = True
            elif isinstance(body, views.ApprovalResolved | views.QuestionResolved):
                self.asking = False
            return
        if isinstance(body, views.TurnStarted):
            self.turn_started, self.steps_done, self.waiting_since, self.asking = now, 0, now, False
            self.calls.clear()
        elif isinstance(body, views.ModelStepFinished):
            self.steps_done = max(self.steps_done, body.step)
            self.waiting_since = now
        elif isinstance(body, views.ToolStarted):
            self.calls[body.call_id] = _Call(body.title or body.tool, now)
        elif isinstance(body, views.ToolFinished):
            self.calls.pop(body.result.call_id, None)
            if not self.calls:
                self.waiting_since = now
            job = job_of_result(body.result)
            if job is not None:
                self.job_seen(job, now)
        elif isinstance(body, views.ApprovalRequested | views.QuestionAsked):
            self.asking = True
        elif isinstance(body, views.ApprovalResolved | views.QuestionResolved):
            self.asking = False
        elif isinstance(body, views.BackgroundTaskDone):
            self.background.pop(body.run_id, None)
        elif isinstance(body, views.TurnFinished):
            self.turn_started, self.waiting_since, self.asking = None, None, False
            self.calls.clear()

    @property
    def in_background(self) -> bool:
        """Something still runs in the background (a child or a job): the line keeps ticking."""
        return bool(self.background or self.jobs)

    def job_seen(self, job: JobState, now: float) -> bool:
        """Take a job's state (from a call's result or a /jobs listing); True when this ended one the
        line was showing."""
        if job.running:
            self.jobs.setdefault(job.job_id, _Call(f"$ {job.title}", now - job.runtime_s))
            return False
        return self.jobs.pop(job.job_id, None) is not None

    def line(self, now: float) -> str:
        """'step 3 · Running · sleep 6 · 4s · turn 12s · Ctrl-C interrupts · background: tests 40s';
        "" when there is nothing to say (no turn, an answer awaited, a wait shorter than a second)."""
        parts: list[str] = []
        if self.turn_started is not None and not self.asking:
            if self.calls:
                oldest = min(self.calls.values(), key=lambda c: c.started)
                wait, what, step = now - oldest.started, oldest.title, max(1, self.steps_done)
                if len(self.calls) > 1:
                    what += f" (+{len(self.calls) - 1} more)"
            else:
                wait, what = now - (self.waiting_since or self.turn_started), "waiting for the model"
                step = self.steps_done + 1
            if wait >= SHOW_AFTER_SECONDS:
                parts += [f"step {step}", f"{what} · {elapsed(wait)}",
                          f"turn {elapsed(now - self.turn_started)}", self.keys]
        if self.in_background:
            running = sorted([*self.background.values(), *self.jobs.values()], key=lambda c: c.started)
            shown = running[:BACKGROUND_SHOWN]
            parts.append("background: " + ", ".join(f"{c.title} {elapsed(now - c.started)}" for c in shown)
                         + (f" (+{len(running) - len(shown)} more)" if len(running) > len(shown) else ""))
        return " · ".join(parts)


class TerminalTicker:
    """``run`` on a terminal: the progress line as the last line, redrawn every ``interval`` seconds
    from a thread and erased before each event is rendered (one lock orders the two)."""

    def __init__(self, render: Callable[[views.Event], None], out: TextIO, mid_line: Callable[[], bool],
                 interval: float = 0.5, width: Callable[[], int] = lambda: 120) -> None:
        self.progress = Progress()
        self._render = render
        self._out = out
        self._mid_line = mid_line
        self._width = width
        self._lock = threading.Lock()
        self._drawn = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, args=(interval,), name="progress", daemon=True)
        self._thread.start()

    def sink(self, event: views.Event) -> None:
        """Render ``event`` (the status line erased first, redrawn after)."""
        with self._lock:
            self._erase()
            self._render(event)
            self.progress.feed(event, time.monotonic())
            self._draw()

    def close(self) -> None:
        """Stop ticking and leave no status line behind."""
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            self._erase()

    def _tick(self, interval: float) -> None:
        while not self._stop.wait(interval):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        line = self.progress.line(time.monotonic())
        if not line or self._mid_line():
            self._erase()
            return
        line = line[: max(20, self._width() - 5)]  # one row: a wrapped line could not be erased
        if line == self._drawn:
            return
        self._out.write(f"\r\x1b[2K\x1b[2m  ⋯ {line}\x1b[0m")
        self._out.flush()
        self._drawn = line

    def _erase(self) -> None:
        if self._drawn:
            self._out.write("\r\x1b[2K")
            self._out.flush()
            self._drawn = ""


async def tick_while(active: Callable[[], bool], redraw: Callable[[], None], interval: float = 1.0) -> None:
    """Redraw every ``interval`` seconds while ``active()`` (the REPL's prompt area shows the line)."""
    import asyncio

    while active():
        await asyncio.sleep(interval)
        redraw()
