"""The turn pipeline: a short orchestrator over the session runtime's parts.

run -> steps -> (model step -> tool batch -> save -> decide)*; every decision
is a pure function of services/loop/policy (turn policy, guards, search
ladder, handoff); errors that end a turn are mapped to statuses in one place
(``_guarded``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from services.loop.approvals import Decision, Pending
from services.loop.compaction.keeper import fixed_tokens
from services.loop.dispatch import ApprovalStop, DispatchContext, fill_cancelled, run_batch, tool_message
from services.loop.policy.guards import DuplicateCallGuard, StrategyGate
from services.loop.policy.handoff import HandoffFacts, handoff_report
from services.loop.policy.search import LadderLimits, SearchLadder, search_gate_message
from services.loop.policy.turn import Action, Facts, Status, decide, handoff_needed
from services.loop.ports import ModelError, StepResult, ToolCall, ToolOutcome, Usage
from services.loop.prompt import Message, assemble_view, environment_block, tail_blocks
from services.loop.turn_events import (
    ApprovalResolved,
    ContextAssembled,
    EventBody,
    ModelStepFinished,
    Notice,
    QuestionResolved,
    ReasoningDelta,
    SearchStalled,
    TextDelta,
    TurnFinished,
    TurnStarted,
)

if TYPE_CHECKING:
    from services.loop.runtime import SessionRuntime

log = logging.getLogger("ai_coding.loop")

COMPLETED, TIMEOUT, INTERRUPTED, APPROVAL_STOP, FAILED = (
    Status.COMPLETED, Status.TIMEOUT, Status.INTERRUPTED, Status.APPROVAL_STOP, Status.FAILED)


@dataclass
class _StepState:
    partial_text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    dispatch: DispatchContext | None = None


class Turn:
    """One user turn of a session runtime."""

    def __init__(self, rt: SessionRuntime, text: str, number: int) -> None:
        self.rt = rt
        self.text = text
        self.number = number
        self.pending = Pending(number)
        self.usage = Usage()
        self.iterations = 0
        self.continuations = 0
        self.final_text = ""
        self.outcomes: list[ToolOutcome] = []
        self.stop_reason = ""  # set before cancelling: "interrupted" or "service_stopping"
        st = rt.settings
        self.duplicates = DuplicateCallGuard(threshold=st.duplicate_call_threshold)
        self.strategy = StrategyGate(st.failed_streak_threshold, st.max_strategy_nudges, st.stall_iterations)
        self.ladder = SearchLadder(LadderLimits(
            st.search_streak_threshold, st.search_streak_l2, st.search_streak_l3, st.stale_streak_l1,
            st.stale_streak_l2, st.stale_streak_l3, st.repeated_nonempty_l3))
        self.round_iterations = 0
        self.batch_task: asyncio.Task[None] | None = None
        self.aux_tail: dict[str, str] = {}
        self._truncated = False
        self.finished = False
        self._step = _StepState()
        self._started = time.monotonic()
        self._deadline = self._started + rt.settings.turn_timeout_seconds if rt.settings.turn_timeout_seconds > 0 else 0.0

    def emit(self, body: EventBody) -> None:
        """Emit one typed event of this turn (the seam every part of the turn reports through)."""
        self.rt.events.emit(self.number, body)

    def remaining(self) -> float:
        return self._deadline - time.monotonic() if self._deadline else 3600.0

    async def run(self) -> None:
        """Run the turn to its TurnFinished event (never raises for turn-level failures)."""
        self.emit(TurnStarted(turn=self.number, input=self.text, model=self.rt.model.model_name))
        self._append({"role": "user", "content": self.text})
        self._save()
        status, reason = await self._guarded()
        self._end(status, reason)

    async def _guarded(self) -> tuple[Status, str]:
        try:
            async with asyncio.timeout(self.remaining() if self._deadline else None):
                return await self._steps()
        except TimeoutError:
            return TIMEOUT, f"turn clock of {self.rt.settings.turn_timeout_seconds:g}s ran out"
        except ApprovalStop:
            return APPROVAL_STOP, "the user answered stop to an approval"
        except ModelError as err:
            if err.reason == "timeout" and self._deadline and self.remaining() < 1.0:
                return TIMEOUT, f"turn clock of {self.rt.settings.turn_timeout_seconds:g}s ran out"
            return FAILED, f"model {err.reason}: {err.message}"
        except Exception as exc:  # a bug must still end the turn with its final event
            log.exception("turn %d of session %s failed", self.number, self.rt.session.id)
            return FAILED, f"internal_error: {type(exc).__name__}: {str(exc)[:200]}"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self.stop_reason or task is None:
                raise
            task.uncancel()  # the cancel was ours: finish the turn normally
            return (INTERRUPTED, "interrupted by the user") if self.stop_reason == INTERRUPTED else (
                FAILED, self.stop_reason)

    async def _steps(self) -> tuple[Status, str]:
        self.aux_tail = await self.rt.turn_preflight(self.emit)
        while True:
            step = await self._model_step()
            self._append_assistant(step)
            nudges: list[str] = []
            if step.tool_calls:
                nudges = await self._batch(step.tool_calls)
            self._save()
            decision = decide(self._facts(step))
            if decision.final_summary_step:
                await self._closing_answer(decision.reason)
            if decision.finished and decision.status is not None:
                return decision.status, decision.reason
            if decision.action is Action.NUDGE:
                self.continuations += 1
                nudges.append(decision.nudge)
            if decision.rearm:
                self.round_iterations = 0
            for nudge in nudges:
                self._append({"role": "user", "content": nudge})

    async def _closing_answer(self, reason: str) -> None:
        """One last step without tools so the model writes its answer (search unconverged)."""
        self._append({"role": "user", "content": f"[search-gate] {reason}. Searching is over: write your final "
                      "answer now from the evidence you have, including what is still unknown."})
        step = await self._model_step(with_tools=False)
        step.tool_calls = []  # none were offered; a stray call is dropped rather than left unpaired
        self._append_assistant(step)

    async def _model_step(self, with_tools: bool = True) -> StepResult:
        rt = self.rt
        self._step = _StepState()
        tools = [t.spec for t in rt.tools.visible()] if with_tools else []
        step_parts = await rt.step_tail(self.emit)
        for hard in (False, True):  # a context_length refusal compacts harder and retries the step once
            tail = tail_blocks({**self.aux_tail, **step_parts, **rt.tail_parts(), **rt.context.tail_part(),
                                "environment": environment_block(rt.session.workspace, rt.model.model_name)})
            messages = await self._request(tools, tail, hard=hard)
            try:
                step = await rt.model.step(messages, tools, on_text=self._on_text, on_reasoning=self._on_reasoning,
                                           timeout_seconds=self.remaining(), on_reset=self._on_reset)
                break
            except ModelError as err:
                if err.reason != "context_length" or hard or not rt.context.settings.enabled:
                    raise
                self.emit(Notice(level="warning", text="the request was too long for the model; compacting "
                                                       "harder and retrying the step"))
        rt.context.observe(step.usage.prompt_tokens)
        self.iterations += 1
        self.round_iterations += 1
        self.usage = self.usage.add(step.usage)
        rt.add_usage(step.usage)
        self.emit(ModelStepFinished(step=self.iterations, usage=step.usage, latency_ms=step.latency_ms,
                                    finish_reason=step.finish_reason))
        return step

    async def _request(self, tools: list[dict[str, Any]], tail: list[tuple[str, str]], hard: bool) -> list[Message]:
        """The request's messages: the history compacted first when it would reach the ceiling."""
        rt = self.rt
        fixed = fixed_tokens(rt.instructions, tools, sum(len(text.encode()) for _, text in tail))
        await rt.context.prepare(rt.session.messages, fixed, self.text, rt.model, self.emit, self._save, hard=hard)
        history, history_bytes = rt.context.request_history(rt.session.messages)
        messages, stats = assemble_view(rt.instructions, history, history_bytes, tail, tools)
        fill = rt.context.fill()
        self.emit(ContextAssembled(
            instructions_bytes=stats.instructions_bytes, tools_bytes=stats.tools_bytes,
            history_bytes=stats.history_bytes, tail_bytes=stats.tail_bytes,
            estimated_tokens=max(stats.estimated_tokens, fill.used), tail_parts_json=_json(stats.tail_parts),
            ceiling_tokens=fill.ceiling, window_tokens=fill.window))
        return messages

    def _on_text(self, text: str) -> None:
        self._step.partial_text += text
        self.emit(TextDelta(text=text))

    def _on_reset(self) -> None:
        self._step.partial_text = ""
        self.emit(Notice(level="warning",
                         text="the model's stream broke off; retrying the step (its partial text above is discarded)"))

    def _on_reasoning(self, text: str) -> None:
        self.emit(ReasoningDelta(text=text))

    def _append_assistant(self, step: StepResult) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if step.reasoning:
            message["reasoning"] = step.reasoning
        if step.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _stored_arguments(c)}}
                for c in step.tool_calls
            ]
        if step.text:  # an answer cut at the output limit and then continued reads as one
            self.final_text = self.final_text + step.text if self._truncated else step.text
        self._truncated = step.finish_reason == "length" and not step.tool_calls
        self._step.partial_text = ""
        self._append(message)
        if not step.tool_calls:  # with calls, the save waits for their results: saves are always paired
            self._save()

    async def _batch(self, calls: list[ToolCall]) -> list[str]:
        """Run one batch; returns the nudges its results earned (strategy gate, search ladder)."""
        ctx = self.rt.dispatch_context(self)
        self._step.calls, self._step.dispatch = calls, ctx
        self.batch_task = asyncio.ensure_future(run_batch(ctx, calls))
        try:
            await self.batch_task
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the turn itself is being cancelled
            fill_cancelled(ctx, calls, "cancelled_by_user", "the user cancelled this batch; try another way")
        finally:
            self.batch_task = None
            self._record_results(ctx, calls)
        return self._observe(calls, ctx.outcomes)

    def _observe(self, calls: list[ToolCall], outcomes: dict[str, ToolOutcome]) -> list[str]:
        nudges: list[str] = []
        for call in calls:
            outcome = outcomes[call.id]
            args = call.arguments() if not call.parse_error else {}
            if outcome.ok:
                self.duplicates.record_success(call.name, args)
            self.ladder.observe(call.name, outcome.ok, args, outcome.output, outcome.data)
        strategy = self.strategy.observe_step((outcomes[c.id].ok, outcomes[c.id].error_code) for c in calls)
        if strategy:
            nudges.append(strategy)
        stalled = self.ladder.check(self.iterations)
        if stalled is not None:
            self.emit(SearchStalled(iteration=stalled.iteration, level=stalled.level, streak=stalled.streak,
                                    stale_streak=stalled.stale_streak, novel=stalled.novel, reason=stalled.reason))
            if not stalled.unconverged:
                commands = tuple(self.rt.settings.static_check.commands)
                nudges.append(search_gate_message(stalled, commands=commands))
        return nudges

    def _record_results(self, ctx: DispatchContext, calls: list[ToolCall]) -> None:
        if self._step.dispatch is not ctx:
            return
        fill_cancelled(ctx, calls, "cancelled", "the turn ended before this call finished")
        for call in calls:
            outcome = ctx.outcomes[call.id]
            self.outcomes.append(outcome)
            self._append(tool_message(outcome))
        self._step.dispatch = None

    def _facts(self, step: StepResult) -> Facts:
        st = self.rt.settings
        return Facts(
            made_tool_calls=bool(step.tool_calls), round_iterations=self.round_iterations,
            max_tool_iterations=st.max_tool_iterations, open_items=self.rt.open_tasks(),
            continuations_used=self.continuations, max_auto_continuations=st.max_auto_continuations,
            elapsed_seconds=time.monotonic() - self._started, turn_timeout_seconds=st.turn_timeout_seconds,
            tokens_used=self.usage.total_tokens, turn_token_budget=st.turn_token_budget,
            stalled=self.strategy.stalled,
            search_unconverged=self.ladder.level()[0] == 3, truncated=step.finish_reason == "length",
        )

    def _append(self, message: dict[str, Any]) -> None:
        message["_ts"] = time.time()
        self.rt.session.messages.append(message)

    def _save(self) -> None:
        self.rt.save()

    def _end(self, status: Status, reason: str) -> None:
        if self._step.dispatch is not None:
            self._record_results(self._step.dispatch, self._step.calls)
        if self._step.partial_text:  # kept: interrupted or timed-out streamed text
            self._append({"role": "assistant", "content": self._step.partial_text})
            self.final_text = self._step.partial_text
        self.rt.context.end_turn(self.number, status.value, self.text, self.final_text, sorted(
            {str(o.data["path"]) for o in self.outcomes if o.ok and o.tool in ("write", "edit") and o.data.get("path")}))
        cleared = self.pending.clear()
        for request_id in cleared:
            if "-q" in request_id:
                self.emit(QuestionResolved(request_id=request_id, answer="", source="turn_ended"))
            else:
                self.emit(ApprovalResolved(request_id=request_id, decision=Decision.DENY, source="turn_ended"))
        handoff = ""
        if handoff_needed(status, self.final_text):
            handoff = handoff_report(self._handoff_facts(status, reason))
        self.emit(TurnFinished(status=status, text=self.final_text, handoff=handoff, usage=self.usage,
                               iterations=self.iterations, duration_ms=(time.monotonic() - self._started) * 1000.0,
                               reason="" if status == COMPLETED else reason, cleared_requests=cleared))
        self.finished = True
        self._save()
        # Folding the journal and rewriting the summaries waits until the clients have had the
        # turn_finished event (the journal record just written already makes the turn durable).
        asyncio.get_running_loop().call_soon(self.rt.end_of_turn)


    def _handoff_facts(self, status: Status, reason: str) -> HandoffFacts:
        failures = [o for o in self.outcomes if not o.ok]
        last = failures[-1] if failures else None
        artifacts = sorted({str(o.data["path"]) for o in self.outcomes
                            if o.ok and o.tool in ("write", "edit") and o.data.get("path")})
        return HandoffFacts(
            status=status, reason=reason, goal=self.text,
            done=[f"{o.tool}: {o.output.splitlines()[0][:100] if o.output else 'ok'}" for o in self.outcomes if o.ok],
            not_done=self.rt.open_tasks(),
            last_failure=f"{last.tool}: {last.error_code} {last.error_message[:200]}".strip() if last else "",
            artifacts=artifacts, iterations=self.iterations,
        )


def _stored_arguments(call: ToolCall) -> str:
    """Arguments as kept in history: malformed JSON is wrapped so the next request stays valid
    for strict providers while the model can still see what it sent."""
    if not call.parse_error:
        return call.arguments_json
    return json.dumps({"_invalid_json": call.arguments_json[:2000]})


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
