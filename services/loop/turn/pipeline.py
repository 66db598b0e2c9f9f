"""The turn pipeline: a short orchestrator over its session's ``ports.TurnContext``.

run -> steps -> (stages -> model step -> tool batch -> save -> decide)*. Every
decision is a pure function of services/loop/policy (turn policy, guards,
search ladder, handoff), and ``policy.turn.decide`` is the only place a turn's
status comes from: whatever ends the steps (the policy's finish, an exception,
a cancel, the clock) is turned into facts in ``_guarded`` and decided there.

Seams for what plugs into a turn:
- before each model step, the host's ``step_stages`` run in order on a
  ``ports.StepContext`` (compaction replaces the history view there);
- every report is a typed event (``Turn.emit`` / ``StepContext.emit``);
- tools come from the host's registry (``ports.ToolDef``; register, do not branch here);
- an error that should end the turn is a ``errors.LoopError`` whose ``apply_to``
  names its fact.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

from services.loop.core.approvals import Decision, Pending, RequestKind
from services.loop.core.attachments import InputFile, user_content
from services.loop.core.domain import Message, wait_limit
from services.loop.core.errors import LoopError, ModelError
from services.loop.core.ports import StepResult, ToolCall, ToolOutcome, TurnContext, Usage
from services.loop.core.turn_events import (
    ApprovalResolved,
    ContextAssembled,
    Degraded,
    EventBody,
    LedgerUpdated,
    ModelStepFinished,
    Notice,
    QuestionResolved,
    ReasoningDelta,
    SearchStalled,
    TextDelta,
    TurnFinished,
    TurnStarted,
)
from services.loop.policy.acceptance import MAX_GATE_NUDGES, GateFailure
from services.loop.policy.codes import ErrorCode
from services.loop.policy.guards import DuplicateCallGuard, Refusal, StrategyGate, check_path_escape
from services.loop.policy.handoff import HandoffFacts, handoff_report
from services.loop.policy.nudges import shown_nudge
from services.loop.policy.search import LadderLimits, SearchLadder, search_gate_message
from services.loop.policy.static_check import plan_static_check, should_run_static_check
from services.loop.policy.turn import (
    Action,
    Facts,
    Status,
    decide,
    gate_due,
    handoff_needed,
    status_of,
)
from services.loop.policy.turn import Decision as TurnDecision
from services.loop.tools.dispatch import DispatchContext, fill_cancelled, proof_asker, run_batch, tool_message
from services.loop.turn import gate
from services.loop.turn.closing import close_turn, shown_reason
from services.loop.turn.ledger import Ledger
from services.loop.turn.prompt import assemble_view, environment_block, tail_blocks
from services.loop.turn.static_check import run_static_check

log = logging.getLogger("ai_coding.loop")

# A model error this close to the turn clock's end is the clock's doing, not the model's.
CLOCK_GRACE_S = 1.0
# turn.end hooks may run this long past the turn clock (they observe a turn that already ended).
TURN_END_HOOKS_GRACE_S = 30.0


@dataclass
class _StepState:
    partial_text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    dispatch: DispatchContext | None = None


class Turn:
    """One user turn of a session (over its turn context)."""

    def __init__(self, ctx: TurnContext, text: str, number: int, images: tuple[InputFile, ...] = ()) -> None:
        self.ctx = ctx
        self.text = text
        self.images = images
        self.number = number
        self.pending = Pending(number)
        self.usage = Usage()
        self.iterations = 0
        self.continuations = 0
        self.final_text = ""
        self.outcomes: list[ToolOutcome] = []
        self.stop_reason = ""  # set before cancelling: "interrupted" or "service_stopping"
        self.status: Status | None = None
        """How the turn ended, once it did (decide()'s answer)."""
        self.reason = ""
        """decide()'s reason for that status."""
        st = ctx.settings
        self.duplicates = DuplicateCallGuard(threshold=st.duplicate_call_threshold)
        self.strategy = StrategyGate(st.failed_streak_threshold, st.max_strategy_nudges, st.stall_iterations)
        self.ladder = SearchLadder(LadderLimits(
            st.search_streak_threshold, st.search_streak_l2, st.search_streak_l3, st.stale_streak_l1,
            st.stale_streak_l2, st.stale_streak_l3, st.repeated_nonempty_l3))
        self.round_iterations = 0
        self.gate_nudges = 0
        self.max_gate_nudges = MAX_GATE_NUDGES
        """`[acceptance-gate]` nudges this turn may give (a plan step: one repair)."""
        self.ledger = Ledger()
        self.proved: set[str] = set()
        """Acceptance items whose proof passed this turn (the gate runs only the others)."""
        self._budget_rechecked = False
        self.batch_task: asyncio.Task[None] | None = None
        self.aux_tail: dict[str, str] = {}
        self._truncated = False
        self._static_check_ran = False
        self.finished = False
        self._step = _StepState()
        self._started = time.monotonic()
        self._deadline = self._started + ctx.settings.turn_timeout_seconds if ctx.settings.turn_timeout_seconds > 0 else 0.0

    def emit(self, body: EventBody) -> None:
        """Emit one typed event of this turn (the seam every part of the turn reports through)."""
        self.ctx.emit(self.number, body)

    def remaining(self) -> float:
        """Seconds left on the turn clock; ``math.inf`` when the turn has none."""
        return self._deadline - time.monotonic() if self._deadline else math.inf

    async def run(self) -> None:
        """Run the turn to its TurnFinished event (never raises for turn-level failures)."""
        self.emit(TurnStarted(turn=self.number, input=self.text, model=self.ctx.model.model_name))
        self._append({"role": "user", "content": user_content(self.text, self.images)})
        self._save()
        decision = await self._guarded()
        await self._turn_end_hooks(decision)
        self._end(decision)

    async def _turn_end_hooks(self, decision: TurnDecision) -> None:
        """turn.end hooks (observe only) see the status before clients get turn_finished."""
        try:
            async with asyncio.timeout(wait_limit(max(self.remaining(), 0.0) + TURN_END_HOOKS_GRACE_S)):
                await self.ctx.hooks.turn_end(self.number, status_of(decision).value, self.final_text, self.emit)
        except Exception as exc:  # observing hooks fail open: the turn still ends as decided
            self.emit(Degraded(component="hooks", reason=f"turn.end: {type(exc).__name__}: {exc}"))

    def crashed(self, exc: BaseException) -> None:
        """The turn's task failed outside ``run``'s guard: clients must still see an end."""
        if self.finished:
            return
        decision = decide(self._facts(engine_error=f"internal_error: {type(exc).__name__}"))
        self.finished = True
        self.emit(TurnFinished(status=status_of(decision), text=self.final_text, handoff="", usage=self.usage,
                               iterations=self.iterations, duration_ms=self._elapsed_ms(), reason=decision.reason))

    async def _guarded(self) -> TurnDecision:
        """Run the steps; what ends them otherwise becomes a fact and decide() answers it."""
        try:
            async with asyncio.timeout(wait_limit(self.remaining())):
                return await self._steps()
        except TimeoutError:
            return decide(self._facts(cut_by_clock=True))
        except ModelError as err:
            if err.reason == "timeout" and self._deadline and self.remaining() < CLOCK_GRACE_S:
                return decide(self._facts(cut_by_clock=True))
            return decide(err.apply_to(self._facts()))
        except LoopError as err:
            return decide(err.apply_to(self._facts()))
        except Exception as exc:  # a bug must still end the turn with its final event
            log.exception("turn %d of session %s failed", self.number, self.ctx.session_id)
            return decide(self._facts(engine_error=f"internal_error: {type(exc).__name__}: {str(exc)[:200]}"))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self.stop_reason or task is None:
                raise
            task.uncancel()  # the cancel was ours: finish the turn normally
            if self.stop_reason == "interrupted":
                return decide(self._facts(interrupted=True))
            return decide(self._facts(engine_error=self.stop_reason))

    async def _steps(self) -> TurnDecision:
        self.aux_tail = await self.ctx.turn_tail(self.emit)
        await self.ctx.hooks.turn_start(self.number, self.text, self.emit)
        while True:
            step = await self._model_step()
            self._append_assistant(step)
            nudges: list[str] = []
            if step.tool_calls:
                nudges = await self._batch(step.tool_calls)
            self._save()
            decision = decide(self._facts(step))
            if self._gate_applies(decision):
                decision = decide(self._facts(step, gate=await self._acceptance_gate()))
            self._ledger_changed()
            if decision.final_summary_step:
                await self._closing_answer(decision.reason)
            if decision.finished:
                return decision
            if decision.action is Action.NUDGE:
                if decision.rule == "acceptance_nudge":
                    self.gate_nudges += 1
                    await self.ctx.hooks.stop_blocked(self.number, decision.reason, self.emit)
                else:
                    self.continuations += 1
                nudges.append(decision.nudge)
            if decision.rearm:
                self.round_iterations = 0
            for nudge in nudges:
                self._append({"role": "user", "content": nudge})
                self.emit(Notice(level="info", text=f"  {shown_nudge(nudge)}"))  # what the model was told

    def _gate_applies(self, decision: TurnDecision) -> bool:
        """Check the acceptance proofs now? When the model stopped, and once per turn after a budget
        finish with clock left; only while some item is not yet proved this turn."""
        if not gate_due(decision) or all(i.id in self.proved for i in self.ctx.acceptance.items()):
            return False
        if decision.rule == "completed":
            return True
        if self._budget_rechecked or self.remaining() < gate.MIN_PROOF_S:
            return False
        self._budget_rechecked = True
        return True

    async def _acceptance_gate(self) -> list[GateFailure]:
        """Run the proofs not yet passed (services/loop/turn/gate.py); returns those that failed."""
        ctx = self.ctx
        items = [i for i in ctx.acceptance.items() if i.id not in self.proved]
        verdicts = await gate.check(items, gate.GateDeps(
            session_id=ctx.session_id, runner=ctx.runner, permission=ctx.gate, emit=self.emit,
            remaining=self.remaining, bash=ctx.tools.get("bash"), ask=proof_asker(self._dispatch_context)))
        self.proved.update(v.item.id for v in verdicts if v.passed)
        ctx.acceptance.record({v.item.id: v.passed for v in verdicts})
        failures = [v.failure() for v in verdicts if not v.passed]
        self.ledger.proofs(failures, [v.item.id for v in verdicts if v.passed])
        return failures

    def _ledger_changed(self) -> None:
        """Tell the clients when the uncertainty ledger's open set changed (an observation, never a nudge)."""
        entries = self.ledger.update(self.outcomes)
        if entries is not None:
            self.emit(LedgerUpdated(open=entries))

    async def _closing_answer(self, reason: str) -> None:
        """One last step without tools so the model writes its answer (search unconverged)."""
        self._append({"role": "user", "content": f"[search-gate] {reason}. Searching is over: write your final "
                      "answer now from the evidence you have, including what is still unknown."})
        step = await self._model_step(with_tools=False)
        step.tool_calls = []  # none were offered; a stray call is dropped rather than left unpaired
        self._append_assistant(step)

    async def _model_step(self, with_tools: bool = True) -> StepResult:
        ctx = self.ctx
        self._step = _StepState()
        step_parts = await ctx.step_tail(self.emit)  # first: it may load a tool (a skill appeared)
        hook_context = await ctx.hooks.step_before(self.number, self.iterations + 1, self.emit)
        tools = [t.spec for t in ctx.tools.visible()] if with_tools else []
        for hard in (False, True):  # a context_length refusal compacts harder and retries the step once
            parts = {**self.aux_tail, **step_parts, "hook-context": hook_context,
                     "environment": environment_block(ctx.workspace, ctx.model.model_name)}
            messages = await self._request(tools, parts, hard=hard)
            try:
                step = await ctx.model.step(messages, tools, on_text=self._on_text, on_reasoning=self._on_reasoning,
                                           timeout_seconds=self.remaining(), on_reset=self._on_reset,
                                           on_retry=self._on_retry)
                break
            except ModelError as err:
                if err.call is not None:  # a failed call has its step event too (traces: a chat span)
                    self.emit(ModelStepFinished(self.iterations + 1, Usage(), err.call.duration_ms, "error", err.call))
                if err.reason != "context_length" or hard or not ctx.context.enabled:
                    raise
                self.emit(Notice(level="warning", text="the request was too long for the model; compacting "
                                                       "harder and retrying the step"))
        ctx.context.observe(step.usage.prompt_tokens)
        self.iterations += 1
        self.round_iterations += 1
        self.usage = self.usage.add(step.usage)
        ctx.add_usage(step.usage)
        self.emit(ModelStepFinished(step=self.iterations, usage=step.usage, latency_ms=step.latency_ms,
                                    finish_reason=step.finish_reason, call=step.call))
        return step

    async def _request(self, tools: list[dict[str, Any]], parts: dict[str, str], hard: bool) -> list[Message]:
        """The request's messages: the history compacted first when it would reach the ceiling."""
        ctx = self.ctx
        tail = tail_blocks({**parts, **ctx.context.tail_part()})
        fixed = ctx.context.fixed_tokens(ctx.instructions(), tools, sum(len(text.encode()) for _, text in tail))
        if await ctx.context.prepare(ctx.messages, fixed, self.text, ctx.model, self.emit, self._save, hard=hard):
            tail = tail_blocks({**parts, **ctx.context.tail_part()})  # working memory joins a compacted turn
        history, history_bytes = ctx.context.request_history(ctx.messages)
        messages, stats = assemble_view(ctx.instructions(), history, history_bytes, tail, tools)
        fill = ctx.context.fill()
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

    def _on_retry(self, why: str) -> None:
        self.emit(Notice(level="warning", text=f"the model's reply failed before its first words: {why}"))

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

    def _dispatch_context(self) -> DispatchContext:
        ctx = self.ctx
        return DispatchContext(
            session_id=ctx.session_id, workspace=ctx.workspace, runner=ctx.runner, registry=ctx.tools,
            allowed_always=ctx.allowed_tools, interactive=ctx.interactive(), emit=self.emit, pending=self.pending,
            remaining=self.remaining, gate=ctx.gate, memory=ctx.memory, mcp=ctx.mcp, guard=self._guard,
            ask_timeout_seconds=ctx.settings.question_timeout_seconds,
            on_degraded=lambda component, reason: self.emit(Degraded(component=component, reason=reason)),
            before_tool=lambda call, arguments: ctx.hooks.tool_before(call, arguments, self.emit),
            after_tool=lambda call, outcome: ctx.hooks.tool_after(call, outcome, self.emit),
            editor_buffers=ctx.editor_buffers,
        )

    def _guard(self, call: ToolCall, arguments: dict[str, Any]) -> Refusal | None:
        """Duplicate-call and path-escape guards (a refusal becomes the call's result)."""
        refusal = self.duplicates.check(call.name, arguments, call.id)
        if refusal is None and call.name == "bash":
            escaped, refusal = check_path_escape(str(arguments.get("command", "")), self.ctx.workspace,
                                                 self.ctx.settings.strict_paths)
            if escaped and refusal is None:  # observe mode: recorded, not refused
                self.emit(Notice(level="info", text=f"bash names paths outside the workspace: {', '.join(escaped)}"))
        return refusal

    async def _batch(self, calls: list[ToolCall]) -> list[str]:
        """Run one batch; returns the nudges its results earned (strategy gate, search ladder)."""
        ctx = self._dispatch_context()
        self._step.calls, self._step.dispatch = calls, ctx
        self.batch_task = asyncio.ensure_future(run_batch(ctx, calls))
        try:
            await self.batch_task
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the turn itself is being cancelled
            fill_cancelled(ctx, calls, ErrorCode.CANCELLED_BY_USER, "the user cancelled this batch; try another way")
        finally:
            self.batch_task = None
            self._record_results(ctx, calls)
        return await self._observe(calls, ctx.outcomes)

    async def _observe(self, calls: list[ToolCall], outcomes: dict[str, ToolOutcome]) -> list[str]:
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
                commands = tuple(self.ctx.settings.static_check.commands)
                output = await self._static_check(stalled.level, commands)
                nudges.append(search_gate_message(stalled, static_check=output, commands=commands))
        return nudges

    async def _static_check(self, level: int, commands: tuple[str, ...]) -> str:
        """The L2 search gate's static check output, when the operator opted in (else "": the
        nudge names the commands for the model to run through bash, behind the gate)."""
        if not should_run_static_check(level, self.round_iterations, self.ctx.settings.max_tool_iterations,
                                       self._static_check_ran):
            return ""
        plan = plan_static_check(commands, os.environ)
        if not plan.argvs:
            return ""
        self._static_check_ran = True
        return await run_static_check(plan, self.ctx.workspace, os.environ)

    def _record_results(self, ctx: DispatchContext, calls: list[ToolCall]) -> None:
        if self._step.dispatch is not ctx:
            return
        fill_cancelled(ctx, calls, ErrorCode.CANCELLED, "the turn ended before this call finished")
        for call in calls:
            outcome = ctx.outcomes[call.id]
            self.outcomes.append(outcome)
            self._append(tool_message(outcome))
        self._step.dispatch = None

    def _facts(self, step: StepResult | None = None, *, cut_by_clock: bool = False, interrupted: bool = False,
               engine_error: str = "", gate: list[GateFailure] | None = None) -> Facts:
        """The turn's facts after ``step`` (None: the steps ended without one, for the given reason);
        ``gate``: the acceptance gate checked after this step and these proofs failed."""
        st = self.ctx.settings
        return Facts(
            made_tool_calls=bool(step and step.tool_calls), round_iterations=self.round_iterations,
            max_tool_iterations=st.max_tool_iterations, open_items=self.ctx.open_tasks(),
            continuations_used=self.continuations, max_auto_continuations=st.max_auto_continuations,
            elapsed_seconds=time.monotonic() - self._started, turn_timeout_seconds=st.turn_timeout_seconds,
            tokens_used=self.usage.total_tokens, turn_token_budget=st.turn_token_budget,
            stalled=self.strategy.stalled,
            search_unconverged=self.ladder.level()[0] == 3, truncated=bool(step and step.finish_reason == "length"),
            cut_by_clock=cut_by_clock, interrupted=interrupted, engine_error=engine_error,
            gate_checked=gate is not None, gate_failures=gate or [], gate_nudges_used=self.gate_nudges,
            max_gate_nudges=self.max_gate_nudges,
        )

    def _append(self, message: dict[str, Any]) -> None:
        message["_ts"] = time.time()
        self.ctx.messages.append(message)

    def _save(self) -> None:
        self.ctx.save()

    def _elapsed_ms(self) -> float:
        return (time.monotonic() - self._started) * 1000.0

    def _end(self, decision: TurnDecision) -> None:
        status, reason = status_of(decision), decision.reason
        self.status, self.reason = status, reason
        if self._step.dispatch is not None:
            self._record_results(self._step.dispatch, self._step.calls)
        if self._step.partial_text:  # kept: interrupted or timed-out streamed text
            self._append({"role": "assistant", "content": self._step.partial_text})
            self.final_text = self._step.partial_text
        self.ctx.context.end_turn(self.number, status.value, self.text, self.final_text, sorted(
            {str(o.data["path"]) for o in self.outcomes if o.ok and o.tool in ("write", "edit") and o.data.get("path")}))
        cleared = self.pending.clear()
        for request_id, kind in cleared.items():
            if kind is RequestKind.QUESTION:
                self.emit(QuestionResolved(request_id=request_id, answer="", source="turn_ended"))
            elif kind is RequestKind.APPROVAL:  # an editor's buffer request just lapses
                self.emit(ApprovalResolved(request_id=request_id, decision=Decision.DENY, source="turn_ended"))
        handoff = ""
        if handoff_needed(status, self.final_text, len(self.outcomes)):
            handoff = handoff_report(self._handoff_facts(status, reason))
        self.finished = True
        close_turn(self.ctx, self.number, TurnFinished(
            status=status, text=self.final_text, handoff=handoff, usage=self.usage, iterations=self.iterations,
            duration_ms=self._elapsed_ms(), reason=shown_reason(decision), cleared_requests=list(cleared)))


    def _handoff_facts(self, status: Status, reason: str) -> HandoffFacts:
        failures = [o for o in self.outcomes if not o.ok]
        last = failures[-1] if failures else None
        artifacts = sorted({str(o.data["path"]) for o in self.outcomes
                            if o.ok and o.tool in ("write", "edit") and o.data.get("path")})
        return HandoffFacts(
            status=status, reason=reason, goal=self.text,
            done=[f"{o.tool}: {o.output.splitlines()[0][:100] if o.output else 'ok'}" for o in self.outcomes if o.ok],
            not_done=self.ctx.open_tasks(),
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
