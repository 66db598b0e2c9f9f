"""One session's hooks, run at the turn's points (``ports.TurnHooks``).

Hooks of one point run serially, in config order. What a failure means depends on what the
hook may do: an observing or injecting hook fails open (a Degraded event, the turn goes on),
a blocking or rewriting one fails closed (the call is refused with a result naming the hook).
A rewritten call goes back through the permission gate (dispatch does that), so a hook is
never a way around the deny list. Injected text goes only to the ``<hook-context>`` tail
block of the next request: never the system message, never the history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from services.kernel.statedir import STATE_DIR
from services.loop.core.ports import ToolCall, ToolOutcome
from services.loop.core.turn_events import Degraded, EventBody, HookRun
from services.loop.hooks import claude
from services.loop.hooks.answer import Verdict, read_answer, redact_value
from services.loop.hooks.config import (
    Capability,
    HookKind,
    HookPoint,
    HookSettings,
    HookSpec,
    LastRun,
    describe,
)
from services.loop.hooks.runner import HookFailed, run_command, run_python

Emit = Callable[[EventBody], None]
MAX_INJECT_CHARS = 4000
"""One hook's injected text is cut here: the tail is re-sent on every step."""


@dataclass
class _Chain:
    arguments: dict[str, Any] | None = None
    blocked_by: tuple[str, str] | None = None
    """(hook name, reason)."""
    contexts: list[str] = field(default_factory=list)


class HookEngine:
    """The configured hooks of one session and what each did last."""

    def __init__(self, settings: HookSettings, session_id: str, workspace: str) -> None:
        self.settings = settings
        self.session_id = session_id
        self.workspace = workspace
        self.last: dict[str, LastRun] = {}
        self._turn_context: list[str] = []
        self._next_context: list[str] = []
        self._turn = 0
        self._session_started = False

    def scoped(self) -> HookEngine:
        """The same hooks for a child session (a subagent, a plan step): the same entries and the
        same /hooks record, but injected context of its own, so a child neither takes the text
        queued for the parent's next request nor leaves its own there."""
        child = HookEngine(self.settings, self.session_id, self.workspace)
        child.last = self.last
        child._turn = self._turn
        child._session_started = True  # SessionStart belongs to the parent's session
        return child

    @property
    def plugin_dir(self) -> Path:
        raw = self.settings.plugin_dir
        return Path(raw).expanduser() if raw else Path(self.workspace) / STATE_DIR / "hooks"

    # -- the points the turn calls (ports.TurnHooks) --

    async def turn_start(self, turn: int, text: str, emit: Emit) -> None:
        self._turn, self._turn_context, self._next_context = turn, [], []
        first = not self._session_started
        self._session_started = True
        chain = await self._run(HookPoint.TURN_START, {"input": text}, emit,
                                skip=lambda h: h.claude_event == "SessionStart" and not first)
        self._turn_context = chain.contexts

    async def step_before(self, turn: int, step: int, emit: Emit) -> str:
        """Run step.before; returns the ``hook-context`` block body for this step's request."""
        chain = await self._run(HookPoint.STEP_BEFORE, {"step": step}, emit)
        parts = [*self._turn_context, *self._next_context, *chain.contexts]
        self._next_context = []
        return "\n\n".join(p for p in parts if p)

    async def tool_before(self, call: ToolCall, arguments: dict[str, Any], emit: Emit) -> ToolCall | ToolOutcome:
        """The call to run (rewritten or not), or the refusal a blocking hook (or its failure) earned."""
        if not self.settings.at(HookPoint.TOOL_BEFORE):
            return call
        chain = await self._run(HookPoint.TOOL_BEFORE, {"tool": call.name, "call_id": call.id, "arguments": arguments},
                                emit, tool=call.name, call_id=call.id)
        self._next_context += chain.contexts
        if chain.blocked_by is not None:
            hook, reason = chain.blocked_by
            outcome = ToolOutcome.error(call.id, call.name, "blocked_by_hook",
                                    f"the {hook!r} hook refused this call: {reason}; choose another approach")
            outcome.data = {"hook": hook, "reason": reason}
            return outcome
        if chain.arguments is not None:
            return replace(call, arguments_json=json.dumps(chain.arguments, ensure_ascii=False))
        return call

    async def tool_after(self, call: ToolCall, outcome: ToolOutcome, emit: Emit) -> None:
        if not self.settings.at(HookPoint.TOOL_AFTER):
            return
        result = {"ok": outcome.ok, "output": outcome.output[:20_000], "error_code": outcome.error_code}
        chain = await self._run(HookPoint.TOOL_AFTER, {"tool": call.name, "call_id": call.id,
                                               "arguments": _args(call), "result": result},
                                emit, tool=call.name, call_id=call.id)
        self._next_context += chain.contexts

    async def turn_end(self, turn: int, status: str, text: str, emit: Emit) -> None:
        await self._run(HookPoint.TURN_END, {"status": status, "text": text}, emit)
        self._turn_context, self._next_context = [], []

    async def stop_blocked(self, turn: int, reason: str, emit: Emit) -> None:
        await self._run(HookPoint.STOP_BLOCKED, {"reason": reason}, emit)

    async def observe(self, point: HookPoint, payload: dict[str, Any], emit: Emit) -> None:
        """Run an observing point (memory.harvest, compact.*, subagent.*, stop.blocked)."""
        await self._run(point, payload, emit)

    # -- /hooks --

    def report(self) -> tuple[str, list[dict[str, Any]]]:
        rows: list[dict[str, Any]] = []
        lines: list[str] = []
        for spec in self.settings.hooks:
            last = self.last.get(spec.name)
            rows.append({"name": spec.name, "point": spec.point.value, "kind": spec.kind.value,
                         "capabilities": sorted(spec.capabilities), "matcher": spec.matcher,
                         "claude_event": spec.claude_event,
                         "last": None if last is None else {"outcome": last.outcome, "detail": last.detail,
                                                            "duration_ms": last.duration_ms, "runs": last.runs,
                                                            "failures": last.failures}})
            state = "not run yet" if last is None else (
                f"last: {last.outcome}" + (f" ({last.detail[:80]})" if last.detail else "")
                + f" · {last.duration_ms:.0f} ms · {last.runs} run(s), {last.failures} failed")
            lines.append(f"{describe(spec)}\n    {state}")
        if not lines:
            lines = ["no hooks configured (add them under `hooks:` in ~/.config/ai-coding/config.yaml; "
                     "docs/hooks.md)"]
        return "\n".join(lines), rows

    # -- running --

    async def _run(self, point: HookPoint, payload: dict[str, Any], emit: Emit, *, tool: str = "", call_id: str = "",
                   skip: Callable[[HookSpec], bool] = lambda h: False) -> _Chain:
        chain = _Chain()
        for spec in self.settings.at(point):
            if skip(spec) or (tool and not spec.matches(tool, claude.tool_name(tool))):
                continue
            current = dict(payload)
            if chain.arguments is not None:
                current["arguments"] = chain.arguments
            started = time.monotonic()
            try:
                verdict = await self._ask(spec, point, current)
            except HookFailed as failure:
                self._record(spec, point, failure.outcome, failure.detail, started, emit, call_id)
                if spec.fails_closed and point == HookPoint.TOOL_BEFORE:
                    chain.blocked_by = (spec.name, f"the hook {failure.detail} (a blocking hook that fails "
                                                   "refuses the call)")
                    return chain
                emit(Degraded(component=f"hook:{spec.name}", reason=f"{point}: {failure.detail}"))
                continue
            outcome, detail = self._apply(spec, verdict, chain)
            self._record(spec, point, outcome, detail, started, emit, call_id)
            if outcome == "failed" and spec.fails_closed and point == HookPoint.TOOL_BEFORE:
                chain.blocked_by = (spec.name, f"the hook answered wrongly: {detail}")
            elif outcome == "failed":
                emit(Degraded(component=f"hook:{spec.name}", reason=f"{point}: {detail}"))
            if chain.blocked_by is not None:
                return chain
        return chain

    def _apply(self, spec: HookSpec, verdict: Verdict, chain: _Chain) -> tuple[str, str]:
        """Take what the hook is allowed to do; asking for more is its failure (reported, not obeyed)."""
        caps = spec.capabilities
        if verdict.block is not None:
            if Capability.BLOCK not in caps:
                return "failed", "it asked to block but may not (add `block` to its capabilities)"
            chain.blocked_by = (spec.name, verdict.block or "no reason given")
            return "blocked", verdict.block
        outcome = "ok"
        if verdict.arguments is not None:
            if Capability.REWRITE not in caps:
                return "failed", "it sent new arguments but may not rewrite (add `rewrite` to its capabilities)"
            chain.arguments = verdict.arguments
            outcome = "rewritten"
        if verdict.context.strip():
            if Capability.INJECT not in caps:
                return "failed", "it sent context but may not inject (add `inject` to its capabilities)"
            chain.contexts.append(verdict.context.strip()[:MAX_INJECT_CHARS])
            outcome = "injected" if outcome == "ok" else outcome
        return outcome, ""

    async def _ask(self, spec: HookSpec, point: HookPoint, payload: dict[str, Any]) -> Verdict:
        event = {"point": point, "hook": spec.name, "session_id": self.session_id, "turn": self._turn,
                 "workspace": self.workspace, **payload}
        if spec.claude_event:
            event = claude.stdin_event(spec.claude_event, event)
        if not spec.raw:
            event = redact_value(event)
        if spec.kind is HookKind.PYTHON:
            answer = await run_python(spec, event, self.plugin_dir, spec.timeout_seconds)
        else:
            answer = await run_command(spec, json.dumps(event, ensure_ascii=False), self.workspace,
                                       spec.timeout_seconds)
        if spec.claude_event:
            return claude.read_answer(spec.claude_event, answer)
        return read_answer(answer)

    def _record(self, spec: HookSpec, point: HookPoint, outcome: str, detail: str, started: float, emit: Emit,
                call_id: str) -> None:
        duration = (time.monotonic() - started) * 1000.0
        last = self.last.get(spec.name) or LastRun(outcome)
        last.outcome, last.detail, last.duration_ms, last.at = outcome, detail, duration, time.time()
        last.runs += 1
        last.failures += outcome in ("failed", "timeout")
        self.last[spec.name] = last
        emit(HookRun(point=point.value, hook=spec.name, hook_kind=spec.kind.value, duration_ms=duration, outcome=outcome,
                     detail=detail[:500], call_id=call_id))


def _args(call: ToolCall) -> dict[str, Any]:
    try:
        return call.arguments()
    except ValueError:
        return {}
