from __future__ import annotations

from services.loop.policy.handoff import HandoffFacts, handoff_report
from services.loop.policy.turn import Status


def test_the_report_has_goal_done_not_done_last_failure_and_artifacts() -> None:
    text = handoff_report(
        HandoffFacts(
            status=Status.BUDGET,
            reason="token budget of 5000 used (5120)",
            goal="Fix the failing   parser test",
            done=["read parser.py"],
            not_done=["fix tokenizer", "run tests"],
            last_failure="bash `pytest -q` exited 1: 2 failed",
            artifacts=["src/parser.py"],
            iterations=7,
        )
    )
    assert text.startswith("## Handoff: token budget used up")
    assert "Goal: Fix the failing parser test" in text
    assert "- read parser.py" in text
    assert "- fix tokenizer" in text and "- run tests" in text
    assert "Last failure: bash `pytest -q` exited 1" in text
    assert "- src/parser.py" in text
    assert "Model steps: 7" in text


def test_an_early_finish_is_titled_as_no_progress_not_as_an_exhausted_budget() -> None:
    text = handoff_report(HandoffFacts(status=Status.MAX_ITERATIONS, reason="no progress (early finish)"))
    assert text.startswith("## Handoff: no progress (early finish)")
    assert "iteration budget" not in text


def test_empty_facts_say_so_instead_of_inventing() -> None:
    text = handoff_report(HandoffFacts(status=Status.TIMEOUT))
    assert "Goal: (not recorded)" in text
    assert "nothing recorded as done" in text
    assert "Last failure: none" in text
    assert "no files changed" in text


def test_long_lists_are_cut_with_a_count() -> None:
    text = handoff_report(HandoffFacts(status=Status.FAILED, not_done=[f"item {n}" for n in range(20)]))
    assert "- ... and 8 more" in text
