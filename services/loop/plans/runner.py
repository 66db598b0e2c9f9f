"""``/plan <topic>``: a planning turn writes the todo list, then each item runs in a step session.

The run is one turn of the parent session to its clients (one ``turn_started``, one
``turn_finished``); inside it every planning or step turn is an ordinary ``pipeline.Turn``
on a ``step.step_context``. Per item: with ``verify``, the acceptance gate with one repair,
then ``blocked``; without, ``stalled`` unless the model marked it done. Every item gets a
receipt (``receipts.py``); the run ends through ``policy.turn.decide`` with
``plan_run`` facts.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.loop.compaction.settings import CompactionSettings
from services.loop.core.acceptance import AcceptanceItem, FixedAcceptance
from services.loop.core.approvals import Pending
from services.loop.core.domain import Usage
from services.loop.core.ports import TurnContext
from services.loop.core.sessions import Session
from services.loop.core.tasks import TERMINAL, TaskItem, TaskState, todo_write
from services.loop.core.turn_events import EventBody, PlanReport, PlanStepStarted, TurnFinished, TurnStarted
from services.loop.plans.paths import outside_workspace_paths
from services.loop.plans.prompts import planning_prompt, step_seed
from services.loop.plans.receipts import (
    PLAN,
    PlanRecord,
    Receipt,
    ReceiptOutcome,
    grade,
    report_text,
    unproven,
)
from services.loop.plans.step import step_context
from services.loop.policy.turn import Decision, Facts, Status, decide, status_of
from services.loop.tools.todo_tool import task_list_event
from services.loop.turn import pipeline
from services.loop.turn.closing import close_turn

log = logging.getLogger("ai_coding.loop")



def _ends_run(status: Status | None) -> bool:
    """A planning or step turn that ended so ends the whole run (the user stopped it, the engine failed)."""
    return status is None or status is Status.INTERRUPTED or status is Status.APPROVAL_STOP or (
        status is Status.FAILED)



@dataclass(frozen=True)
class PlanRequest:
    """A queued ``/plan <topic>``."""

    topic: str


@dataclass(frozen=True)
class StepCost:
    """What one item's step took."""

    attempts: int = 0
    """The step's proof attempts: 1, plus one per repair the gate asked for."""
    model_steps: int = 0
    tokens: int = 0
    duration_ms: float = 0.0


@dataclass
class PlanContext:
    """What a run needs from its session (runtime.SessionRuntime builds it)."""

    host: TurnContext
    session: Session
    compaction: CompactionSettings
    set_turn: Callable[[pipeline.Turn], None]
    """Make this the session's running turn (approvals, interrupts reach it)."""
    save: Callable[[], None]
    take_note: Callable[[], str] = lambda: ""
    """The line the model left with checkpoint_write during the last step ("" = none), cleared."""


def refuse_topic(topic: str, workspace: str) -> list[str]:
    """The topic gate: paths outside the workspace the topic names (none: it may run)."""
    return outside_workspace_paths(topic, workspace)


class PlanRunner:
    """One /plan run, as turn ``number`` of its session."""

    def __init__(self, ctx: PlanContext, topic: str, number: int) -> None:
        self.ctx = ctx
        self.host = ctx.host
        self.topic = topic
        self.number = number
        self.usage = Usage()
        self.iterations = 0
        self.step_turns = 0
        self.receipts: list[Receipt] = []
        self.turn: pipeline.Turn | None = None
        self._started = time.monotonic()

    def emit_body(self, body: EventBody) -> None:
        self.host.emit(self.number, body)

    async def run(self) -> None:
        """Plan, run the items, report, and end with one turn_finished (never raises for the run's failures)."""
        host = self.host
        self.emit_body(TurnStarted(turn=self.number, input=f"/plan {self.topic}", model=host.model.model_name))
        self.ctx.session.task_state = TaskState(goal=self.topic)  # a new plan: new goal, empty list
        PLAN.write(self.ctx.session, PlanRecord(self.topic))
        host.messages.append({"role": "user", "content": f"/plan {self.topic}", "_ts": time.time()})
        self.ctx.save()
        try:
            facts = await self._run()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            reason = self.turn.stop_reason if self.turn is not None else ""
            if not reason or task is None:
                raise
            task.uncancel()
            facts = self._facts(interrupted=reason == "interrupted",
                                engine_error="" if reason == "interrupted" else reason)
        except Exception as exc:  # a bug must still end the run with its final event
            log.exception("plan run %d of session %s failed", self.number, host.session_id)
            facts = self._facts(engine_error=f"internal_error: {type(exc).__name__}: {str(exc)[:200]}")
        self._end(decide(facts))

    async def _run(self) -> Facts:
        planning = await self._turn(planning_prompt(self.topic), item_id="", verify="", label="plan", prefix="p0")
        if _ends_run(planning.status):
            return self._facts_after(planning)
        state = self._state()
        if not state.items:
            return self._facts(refusal="the planning turn wrote no todo items")
        for item in state.items:
            outside = outside_workspace_paths(f"{item.content} {item.verify}", self.host.workspace)
            if outside:  # the item gate, before any step's model call
                self._leave_open(state.items, 1)
                return self._facts(refusal=f"item {item.id} names paths outside the workspace: {', '.join(outside)}")
        total = len(state.items)
        for index, planned in enumerate(state.items, start=1):
            item = self._state().get(planned.id) or planned
            receipt, stop = await self._item(item, index, total)
            self.receipts.append(receipt)
            self._save_receipts()
            self.emit_body(receipt)
            if stop is not None:
                self._leave_open(state.items[index:], index + 1)
                return self._facts_after(stop)
        return self._facts()

    async def _item(self, item: TaskItem, index: int, total: int) -> tuple[Receipt, pipeline.Turn | None]:
        """Run one item; returns its receipt and, when the run must end, the step turn that ended it."""
        cap = self.host.settings.plan_max_step_turns
        if item.status == "completed":  # done during planning: nothing ran, nothing proved
            return self._receipt(item, index, ReceiptOutcome.DONE, attested=False), None
        if item.status == "dropped":
            return self._receipt(item, index, ReceiptOutcome.OPEN, note="dropped"), None
        if cap and self.step_turns >= cap:
            return self._receipt(item, index, ReceiptOutcome.OPEN, note=f"plan_max_step_turns ({cap}) reached"), None
        started = todo_write(self._state(), {"update": [{"id": item.id, "status": "in_progress"}]},
                             enforce_dependencies=self.host.settings.enforce_dependencies)
        if not started.ok:
            self._mark(item.id, "blocked")
            return self._receipt(item, index, ReceiptOutcome.BLOCKED, note=started.error_code), None
        self._set_state(started.state)
        self.emit_body(PlanStepStarted(index=index, total=total, item_id=item.id, content=item.content))
        began = time.monotonic()
        turn = await self._turn(step_seed(self._state(), item, index, total), item_id=item.id, verify=item.verify,
                                label=f"step{index}", prefix=f"p{index}")
        cost = StepCost(1 + turn.gate_nudges, turn.iterations, turn.usage.total_tokens,
                        (time.monotonic() - began) * 1000.0)
        status = turn.status
        note = self.ctx.take_note()
        after = self._state().get(item.id)
        if _ends_run(status):
            return self._receipt(item, index, ReceiptOutcome.OPEN, note=f"step ended {self._why(turn)}", cost=cost), turn
        if item.verify:
            verdicts = turn.ctx.acceptance.verdicts if isinstance(turn.ctx.acceptance, FixedAcceptance) else []
            if status is Status.COMPLETED and verdicts and verdicts[-1]:
                self._mark(item.id, "completed")
                return self._receipt(item, index, ReceiptOutcome.DONE, verdicts=verdicts, note=note, cost=cost), None
            self._mark(item.id, "blocked")
            return self._receipt(item, index, ReceiptOutcome.BLOCKED, verdicts=verdicts, note=self._why(turn), cost=cost), None
        if after is not None and after.status == "completed":
            return self._receipt(item, index, ReceiptOutcome.DONE, note=note, cost=cost), None
        note = "the model did not mark it done" + (f" ({self._why(turn)})" if status is not Status.COMPLETED else "")
        return self._receipt(item, index, ReceiptOutcome.STALLED, note=note, cost=cost), None

    async def _turn(self, seed: str, *, item_id: str, verify: str, label: str, prefix: str) -> pipeline.Turn:
        """One planning or step turn on a fresh step context."""
        st = self.host.settings
        wall = st.plan_item_wall_seconds if item_id else st.turn_timeout_seconds
        settings = dataclasses.replace(st, turn_timeout_seconds=wall or st.turn_timeout_seconds,
                                       max_auto_continuations=1 if item_id else 0)
        proof = [AcceptanceItem(f"v{item_id}", f"item {item_id} is done", verify, "plan")] if verify else []
        step = step_context(self.host, settings, self.ctx.compaction, item_id=item_id,
                            acceptance=FixedAcceptance(proof), task_state=self._state, turn=self.number, label=label)
        turn = pipeline.Turn(step, seed, self.number)
        turn.pending = Pending(self.number, prefix=f"t{self.number}{prefix}")
        turn.max_gate_nudges = 1  # one repair, then the item is blocked
        self.turn = turn
        self.ctx.set_turn(turn)
        await turn.run()
        self.step_turns += 1 if item_id else 0
        self.usage = self.usage.add(turn.usage)
        self.iterations += turn.iterations
        return turn

    # -- facts, receipts, the end --

    def _leave_open(self, items: list[TaskItem], first_index: int) -> None:
        """Receipts for items the run will not reach (every item gets one)."""
        for index, item in enumerate(items, start=first_index):
            receipt = self._receipt(item, index, ReceiptOutcome.OPEN, note="not run")
            self.receipts.append(receipt)
            self.emit_body(receipt)
        self._save_receipts()

    def _state(self) -> TaskState:
        return copy.deepcopy(self.ctx.session.task_state)

    def _mark(self, item_id: str, status: str) -> None:
        state = self._state()
        item = state.get(item_id)
        if item is not None and item.status not in TERMINAL | {status}:
            item.status = status
            self._set_state(state)

    def _set_state(self, state: TaskState) -> None:
        """The runner moved an item (in progress, completed, blocked): saved, and the clients told."""
        self.ctx.session.task_state = state
        self.emit_body(task_list_event(state))

    def _receipt(self, item: TaskItem, index: int, outcome: ReceiptOutcome, *, attested: bool = True,
                 verdicts: list[bool] | None = None, note: str = "", cost: StepCost | None = None) -> Receipt:
        total, cost = len(self._state().items), cost or StepCost()
        return Receipt(index=index, total=total, item_id=item.id, content=item.content, outcome=outcome,
                       grade=grade(outcome, item.verify, verdicts or [], attested), attested=attested,
                       attempts=cost.attempts, model_steps=cost.model_steps, tokens=cost.tokens,
                       duration_ms=cost.duration_ms, verify=item.verify, note=note)

    def _save_receipts(self) -> None:
        PLAN.write(self.ctx.session, PlanRecord(self._state().goal or self.topic, tuple(self.receipts)))
        self.ctx.save()

    @staticmethod
    def _why(turn: pipeline.Turn) -> str:
        status = turn.status.value if turn.status else "failed"
        return f"{status}: {turn.reason}" if turn.reason else status

    def _facts(self, *, refusal: str = "", interrupted: bool = False, engine_error: str = "") -> Facts:
        unfinished = [f"{r.item_id} ({r.outcome})" for r in self.receipts if r.outcome != ReceiptOutcome.DONE]
        return Facts(made_tool_calls=False, round_iterations=0, plan_run=True, plan_unfinished=unfinished,
                     plan_refusal=refusal, interrupted=interrupted, engine_error=engine_error,
                     tokens_used=self.usage.total_tokens)

    def _facts_after(self, turn: pipeline.Turn) -> Facts:
        """The run's facts when a turn inside it ended it (the user stopped it, the engine failed)."""
        facts = self._facts(interrupted=turn.status is Status.INTERRUPTED,
                            engine_error=turn.reason if turn.status is Status.FAILED else "")
        facts.approval_stopped = turn.status is Status.APPROVAL_STOP
        return facts

    def _end(self, decision: Decision) -> None:
        status = status_of(decision)
        goal = self._state().goal or self.topic
        text = report_text(goal, self.receipts, decision.reason if decision.rule == "plan_incomplete"
                           and "not run" in decision.reason else "")
        self.emit_body(PlanReport(goal=goal, total=len(self.receipts),
                                  done=sum(1 for r in self.receipts if r.outcome == ReceiptOutcome.DONE),
                                  unproven=unproven(self.receipts), text=text))
        self.host.messages.append({"role": "assistant", "content": text, "_ts": time.time()})
        self.host.context.end_turn(self.number, status.value, f"/plan {self.topic}", text.splitlines()[0], [])
        close_turn(self.host, self.number, TurnFinished(
            status=status, text=text, handoff="", usage=self.usage, iterations=self.iterations,
            duration_ms=(time.monotonic() - self._started) * 1000,
            reason="" if status is Status.COMPLETED else decision.reason))
