"""The turn policy: after each step, continue, nudge, or finish with which status.

One pure function over recorded facts, and the only producer of a turn's
status: the pipeline turns whatever happened (a step's result, an exception,
a cancel, the clock) into ``Facts`` and asks ``decide``. Precedence, highest
first:

1. interrupted by the user -> ``interrupted``;
2. the user answered STOP to an approval -> ``approval_stop``;
3. the engine failed (model error after retries, a bug, the service
   stopping) -> ``failed``;
4. the turn clock cut a wait (model step, tool batch, approval), or ran out
   during a step that asked for tools -> ``timeout``;
5. the model answered without tool calls -> ``completed`` (it finished, even
   if the clock or budget ran out during that last step), unless the answer
   was cut at the output token limit and continuations, clock and budget
   remain: then a ``[continue]`` nudge asks for the rest (counted as a
   continuation). When the acceptance gate checked the session's proofs
   (services/loop/plans): all passed -> ``completed`` "acceptance verified";
   one failed -> an ``[acceptance-gate]`` nudge with its output while the
   gate's own budget (2 per turn), clock and tokens last, else
   ``acceptance_failed`` naming the failing command. The end of a /plan run
   (``plan_run``) is ``plan_incomplete`` when an item is blocked, stalled or
   open, or its steps were refused, else ``completed``;
6. the token budget is spent -> ``budget``; terminal, so it wins over
   auto-continuation (a nudge that cannot be acted on only burns tokens).
   A budget finish (this one, or 9's ``max_iterations``) after which the gate
   re-checked every proof and all passed is ``completed``: the work was done;
7. the search ladder reached L3 -> ``max_iterations`` ("search unconverged");
8. steps keep failing with zero successes -> ``max_iterations`` ("no progress");
9. the round's iteration budget is spent: with open todo items and
   continuations left -> a ``[continue]`` nudge naming them and a fresh round;
   otherwise ``max_iterations``;
10. otherwise continue.

Each answer names its branch (``Decision.rule``, one of ``RULES``); the e2e suite
checks that every branch is reached (tests/e2e/test_zz_decide_branches.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from services.loop.policy.acceptance import MAX_GATE_NUDGES, GateFailure, failure_reason, gate_nudge


class Action(StrEnum):
    """What the pipeline does next."""

    CONTINUE = "continue"
    NUDGE = "nudge"
    FINISH = "finish"


class Status(StrEnum):
    """How a turn ended (the proto's TurnStatus by another name)."""

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    BUDGET = "budget"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    APPROVAL_STOP = "approval_stop"
    FAILED = "failed"
    ACCEPTANCE_FAILED = "acceptance_failed"
    PLAN_INCOMPLETE = "plan_incomplete"


@dataclass
class Facts:
    """What happened so far in this turn, as the pipeline recorded it."""

    made_tool_calls: bool
    """The last model step asked for at least one tool call."""
    round_iterations: int
    """Model steps in the current round (reset when a continuation re-arms the budget)."""
    max_tool_iterations: int = 50
    """Steps per round (``ai.max_tool_iterations``)."""
    open_items: list[str] = field(default_factory=list)
    """Contents of todo items still pending / in progress / blocked."""
    continuations_used: int = 0
    """`[continue]` nudges already given this turn."""
    max_auto_continuations: int = 3
    """``ai.max_auto_continuations``; 0 turns continuation off."""
    elapsed_seconds: float = 0.0
    """Wall time since the turn started, approval waits included."""
    turn_timeout_seconds: float = 1800.0
    """``ai.turn_timeout_seconds``; 0 = no clock."""
    clock_expired: bool = False
    """The turn clock ran out during the last step (the step itself returned)."""
    cut_by_clock: bool = False
    """The turn clock cut a wait (model step, tool batch, approval): no step result came back."""
    tokens_used: int = 0
    """Prompt + completion tokens summed over this turn's steps."""
    turn_token_budget: int = 0
    """``ai.turn_token_budget``; 0 = no budget."""
    interrupted: bool = False
    """The user aborted the whole turn."""
    approval_stopped: bool = False
    """The user answered STOP to an approval request."""
    engine_error: str = ""
    """A stable reason when the model step or a core service failed for good."""
    stalled: bool = False
    """``stall_iterations`` steps tried tools and none succeeded (see guards.StrategyGate)."""
    search_unconverged: bool = False
    """The search ladder reached L3 (see search.SearchLadder)."""
    truncated: bool = False
    """The last step stopped at the output token limit (finish_reason "length")."""
    gate_checked: bool = False
    """The acceptance gate ran every proof not yet passed this turn, after this step."""
    gate_failures: list[GateFailure] = field(default_factory=list)
    """The proofs that failed in that check (empty with ``gate_checked``: all passed)."""
    gate_nudges_used: int = 0
    """`[acceptance-gate]` nudges already given this turn."""
    max_gate_nudges: int = MAX_GATE_NUDGES
    plan_run: bool = False
    """These are the facts of a /plan run's end (services/loop/plans/runner.py), not of a model step."""
    plan_unfinished: list[str] = field(default_factory=list)
    """Plan items not done, as "<id> (<outcome>)": blocked, stalled, or left open by a budget stop."""
    plan_refusal: str = ""
    """Why the plan's steps were not run (an item names paths outside the workspace; no items)."""


@dataclass(frozen=True)
class Decision:
    """The policy's answer."""

    action: Action
    status: Status | None = None
    reason: str = ""
    nudge: str = ""
    rearm: bool = False
    """Start a fresh round of ``max_tool_iterations`` (only with the continuation nudge)."""
    final_summary_step: bool = False
    """Ask the model once more with no tools for a closing answer (search L3)."""
    rule: str = "continue"
    """Which branch of decide() answered (one of ``RULES``)."""

    @property
    def finished(self) -> bool:
        """True when the turn ends."""
        return self.action is Action.FINISH


TRUNCATED_NUDGE = (
    "[continue] Your last answer was cut off at the output token limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)


def continue_nudge(open_items: list[str]) -> str:
    """The `[continue]` message naming the open todo items."""
    listed = "; ".join(open_items[:10]) + (f"; and {len(open_items) - 10} more" if len(open_items) > 10 else "")
    return (
        f"[continue] The iteration budget of this round is used up but {len(open_items)} todo item(s) are "
        f"still open: {listed}. Continue with them, and update the todo list as items complete."
    )


RULES = ("interrupted", "approval_stop", "engine_error", "timeout", "truncated_continue", "plan_incomplete",
         "plan_completed", "acceptance_nudge",
         "acceptance_failed", "acceptance_verified", "completed", "budget_verified", "budget", "search_unconverged",
         "no_progress", "auto_continue", "max_iterations", "continue")
VERIFIED = "acceptance verified"


def _finish(rule: str, status: Status, reason: str, *, final_summary_step: bool = False) -> Decision:
    return Decision(Action.FINISH, status, reason, final_summary_step=final_summary_step, rule=rule)


def gate_due(decision: Decision) -> bool:
    """The acceptance gate checks the proofs after this decision, if the session has any: the model
    stopped (``completed``), or a budget finish (token or iteration budget) that the work may have
    beaten (checked once per turn, while the clock lasts; the pipeline keeps count)."""
    return decision.rule in ("completed", "budget", "max_iterations")


def decide(f: Facts) -> Decision:
    """Continue, nudge or finish; see the module docstring for the precedence."""
    if f.interrupted:
        return _finish("interrupted", Status.INTERRUPTED, "interrupted by the user")
    if f.approval_stopped:
        return _finish("approval_stop", Status.APPROVAL_STOP, "stopped at an approval request")
    if f.engine_error:
        return _finish("engine_error", Status.FAILED, f.engine_error)
    out_of_time = f.clock_expired or (f.turn_timeout_seconds > 0 and f.elapsed_seconds >= f.turn_timeout_seconds)
    out_of_tokens = f.turn_token_budget > 0 and f.tokens_used >= f.turn_token_budget
    if f.cut_by_clock or (f.made_tool_calls and out_of_time):
        return _finish("timeout", Status.TIMEOUT, f"turn clock of {f.turn_timeout_seconds:g}s ran out")
    if not f.made_tool_calls:
        if f.truncated and not out_of_time and not out_of_tokens and f.continuations_used < f.max_auto_continuations:
            return Decision(Action.NUDGE, reason="answer cut at the output token limit", nudge=TRUNCATED_NUDGE,
                            rule="truncated_continue")
        if f.plan_run:
            if f.plan_refusal:
                return _finish("plan_incomplete", Status.PLAN_INCOMPLETE, f"plan not run: {f.plan_refusal}")
            if f.plan_unfinished:
                return _finish("plan_incomplete", Status.PLAN_INCOMPLETE,
                               f"plan incomplete: {', '.join(f.plan_unfinished[:10])}")
            return _finish("plan_completed", Status.COMPLETED, "every plan item done")
        if f.gate_failures:
            if f.gate_nudges_used < f.max_gate_nudges and not out_of_time and not out_of_tokens:
                return Decision(Action.NUDGE, reason=failure_reason(f.gate_failures),
                                nudge=gate_nudge(f.gate_failures), rule="acceptance_nudge")
            return _finish("acceptance_failed", Status.ACCEPTANCE_FAILED, failure_reason(f.gate_failures))
        if f.gate_checked:
            return _finish("acceptance_verified", Status.COMPLETED, VERIFIED)
        return _finish("completed", Status.COMPLETED, "the model finished")
    verified = f.gate_checked and not f.gate_failures
    if out_of_tokens:
        if verified:
            return _finish("budget_verified", Status.COMPLETED, f"{VERIFIED} (token budget used up)")
        return _finish("budget", Status.BUDGET, f"token budget of {f.turn_token_budget} used ({f.tokens_used})")
    if f.search_unconverged:
        return _finish("search_unconverged", Status.MAX_ITERATIONS, "search unconverged", final_summary_step=True)
    if f.stalled:
        return _finish("no_progress", Status.MAX_ITERATIONS, "no progress (early finish)")
    if f.round_iterations >= f.max_tool_iterations:
        if f.open_items and f.continuations_used < f.max_auto_continuations:
            return Decision(
                Action.NUDGE,
                reason=f"auto-continuation {f.continuations_used + 1}/{f.max_auto_continuations}",
                nudge=continue_nudge(f.open_items),
                rearm=True,
                rule="auto_continue",
            )
        if verified:
            return _finish("budget_verified", Status.COMPLETED, f"{VERIFIED} (iteration budget used up)")
        return _finish("max_iterations", Status.MAX_ITERATIONS, f"{f.max_tool_iterations} iterations used")
    return Decision(Action.CONTINUE)


def status_of(decision: Decision) -> Status:
    """The status of a finishing decision (decide() sets one whenever it finishes)."""
    if decision.status is None:
        raise AssertionError(f"decide() finished without a status: {decision}")
    return decision.status


def handoff_needed(status: Status, model_text: str) -> bool:
    """A harness-written handoff is due when the turn ended early and the model left no text."""
    return not model_text.strip() and status in (
        Status.MAX_ITERATIONS,
        Status.BUDGET,
        Status.TIMEOUT,
        Status.FAILED,
    )
