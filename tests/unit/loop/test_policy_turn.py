from __future__ import annotations

from services.loop.policy.acceptance import GateFailure
from services.loop.policy.turn import RULES, Action, Decision, Facts, Status, decide, handoff_needed


def facts(**kw: object) -> Facts:
    base: dict[str, object] = {"made_tool_calls": True, "round_iterations": 1, "max_tool_iterations": 10}
    base.update(kw)
    return Facts(**base)  # type: ignore[arg-type]


def test_a_step_without_tool_calls_completes_the_turn() -> None:
    d = decide(facts(made_tool_calls=False))
    assert (d.action, d.status) == (Action.FINISH, Status.COMPLETED)


def test_a_step_with_tool_calls_inside_the_budget_continues() -> None:
    assert decide(facts(round_iterations=3)) == Decision(Action.CONTINUE)


def test_the_iteration_budget_without_open_items_ends_in_max_iterations() -> None:
    d = decide(facts(round_iterations=10))
    assert (d.action, d.status) == (Action.FINISH, Status.MAX_ITERATIONS)


def test_open_todo_items_get_a_continue_nudge_naming_them_and_a_fresh_round() -> None:
    d = decide(facts(round_iterations=10, open_items=["fix parser", "run tests"]))
    assert d.action is Action.NUDGE
    assert d.rearm
    assert d.nudge.startswith("[continue]")
    assert "fix parser" in d.nudge and "run tests" in d.nudge


def test_auto_continuation_stops_after_the_configured_count() -> None:
    assert decide(facts(round_iterations=10, open_items=["x"], continuations_used=2)).action is Action.NUDGE
    d = decide(facts(round_iterations=10, open_items=["x"], continuations_used=3))
    assert d.status is Status.MAX_ITERATIONS


def test_zero_auto_continuations_turns_continuation_off() -> None:
    d = decide(facts(round_iterations=10, open_items=["x"], max_auto_continuations=0))
    assert d.status is Status.MAX_ITERATIONS


def test_the_token_budget_is_terminal_and_wins_over_continuation() -> None:
    d = decide(facts(round_iterations=10, open_items=["x"], tokens_used=5000, turn_token_budget=5000))
    assert (d.action, d.status) == (Action.FINISH, Status.BUDGET)


def test_a_zero_token_budget_means_no_budget() -> None:
    assert decide(facts(tokens_used=10**9, turn_token_budget=0)).action is Action.CONTINUE


def test_the_turn_clock_ends_in_timeout() -> None:
    assert decide(facts(elapsed_seconds=601, turn_timeout_seconds=600)).status is Status.TIMEOUT
    assert decide(facts(clock_expired=True)).status is Status.TIMEOUT
    assert decide(facts(elapsed_seconds=10**6, turn_timeout_seconds=0)).action is Action.CONTINUE


def test_a_final_answer_counts_as_completed_even_when_the_clock_ran_out() -> None:
    assert decide(facts(made_tool_calls=False, elapsed_seconds=700)).status is Status.COMPLETED


def test_interrupt_beats_everything() -> None:
    d = decide(facts(interrupted=True, approval_stopped=True, engine_error="x", made_tool_calls=False))
    assert d.status is Status.INTERRUPTED


def test_approval_stop_and_engine_errors_finish_the_turn() -> None:
    assert decide(facts(approval_stopped=True)).status is Status.APPROVAL_STOP
    d = decide(facts(engine_error="server_error"))
    assert (d.status, d.reason) == (Status.FAILED, "server_error")


def test_a_stall_finishes_early_as_max_iterations_with_an_honest_reason() -> None:
    d = decide(facts(stalled=True, round_iterations=3))
    assert (d.status, d.reason) == (Status.MAX_ITERATIONS, "no progress (early finish)")


def test_search_l3_finishes_and_asks_for_a_closing_answer_without_tools() -> None:
    d = decide(facts(search_unconverged=True))
    assert (d.status, d.reason, d.final_summary_step) == (Status.MAX_ITERATIONS, "search unconverged", True)


def test_a_handoff_is_needed_only_for_early_ends_without_model_text() -> None:
    assert handoff_needed(Status.BUDGET, "")
    assert handoff_needed(Status.TIMEOUT, "  ")
    assert handoff_needed(Status.FAILED, "")
    assert not handoff_needed(Status.MAX_ITERATIONS, "here is where I got to")
    assert not handoff_needed(Status.COMPLETED, "")
    assert not handoff_needed(Status.INTERRUPTED, "")


def test_an_answer_cut_at_the_token_limit_gets_one_continue_nudge() -> None:
    d = decide(facts(made_tool_calls=False, truncated=True))
    assert d.action is Action.NUDGE and not d.rearm
    assert d.nudge.startswith("[continue]") and "cut off" in d.nudge


def test_a_cut_answer_completes_when_continuations_clock_or_budget_are_spent() -> None:
    assert decide(facts(made_tool_calls=False, truncated=True, continuations_used=3)).status is Status.COMPLETED
    assert decide(facts(made_tool_calls=False, truncated=True, clock_expired=True)).status is Status.COMPLETED
    assert decide(facts(made_tool_calls=False, truncated=True, tokens_used=9, turn_token_budget=9)).status is (
        Status.COMPLETED)


def test_a_wait_cut_by_the_clock_is_a_timeout_even_without_tool_calls() -> None:
    d = decide(facts(made_tool_calls=False, cut_by_clock=True, turn_timeout_seconds=2))
    assert (d.status, d.reason) == (Status.TIMEOUT, "turn clock of 2s ran out")


def test_a_stop_or_an_engine_error_outranks_the_clock() -> None:
    assert decide(facts(cut_by_clock=True, approval_stopped=True)).status is Status.APPROVAL_STOP
    assert decide(facts(cut_by_clock=True, engine_error="service_stopping")).status is Status.FAILED


FAILED_PROOF = GateFailure("a1", "tests pass", "pytest -q", 1)


def test_each_rule_names_the_branch_that_answered() -> None:
    cases = {
        "interrupted": facts(interrupted=True), "approval_stop": facts(approval_stopped=True),
        "engine_error": facts(engine_error="x"), "timeout": facts(cut_by_clock=True),
        "truncated_continue": facts(made_tool_calls=False, truncated=True),
        "completed": facts(made_tool_calls=False), "budget": facts(tokens_used=9, turn_token_budget=9),
        "search_unconverged": facts(search_unconverged=True), "no_progress": facts(stalled=True),
        "auto_continue": facts(round_iterations=10, open_items=["a"]), "max_iterations": facts(round_iterations=10),
        "continue": facts(),
        "acceptance_nudge": facts(made_tool_calls=False, gate_checked=True, gate_failures=[FAILED_PROOF]),
        "acceptance_failed": facts(made_tool_calls=False, gate_checked=True, gate_failures=[FAILED_PROOF],
                                   gate_nudges_used=2),
        "acceptance_verified": facts(made_tool_calls=False, gate_checked=True),
        "budget_verified": facts(tokens_used=9, turn_token_budget=9, gate_checked=True),
        "plan_incomplete": facts(made_tool_calls=False, plan_run=True, plan_unfinished=["3 (stalled)"]),
        "plan_completed": facts(made_tool_calls=False, plan_run=True),
    }
    assert sorted(cases) == sorted(RULES)
    assert {rule: decide(f).rule for rule, f in cases.items()} == {rule: rule for rule in cases}
