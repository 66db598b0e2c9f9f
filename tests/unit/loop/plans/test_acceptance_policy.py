"""The acceptance gate's pure parts: decide() over gate facts, /accept parsing, the book, config items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import load_config
from services.loop.core.acceptance import AcceptanceItem
from services.loop.plans.acceptance import AcceptanceBook, AcceptanceError, config_items, parse_accept
from services.loop.plans.command import accept_command
from services.loop.policy.acceptance import GateFailure, gate_nudge
from services.loop.policy.turn import Action, Facts, Status, decide

FAIL = GateFailure("a1", "tests pass", "pytest -q", 1, "E   assert 2 == 3\n1 failed")


def stopped(**kw: Any) -> Facts:
    return Facts(made_tool_calls=False, round_iterations=1, **kw)


def test_a_failed_proof_earns_a_gate_nudge_with_its_output_while_the_gate_budget_lasts() -> None:
    d = decide(stopped(gate_checked=True, gate_failures=[FAIL], gate_nudges_used=1))
    assert d.action is Action.NUDGE and d.rule == "acceptance_nudge"
    assert d.nudge.startswith("[acceptance-gate]") and "`pytest -q` exited 1" in d.nudge and "1 failed" in d.nudge


def test_the_third_failure_ends_the_turn_acceptance_failed_naming_the_command() -> None:
    d = decide(stopped(gate_checked=True, gate_failures=[FAIL, FAIL], gate_nudges_used=2))
    assert d.status is Status.ACCEPTANCE_FAILED and d.reason == "acceptance failed: `pytest -q` exited 1 (and 1 more)"


def test_no_nudge_when_the_token_budget_is_spent_even_with_gate_budget_left() -> None:
    d = decide(stopped(gate_checked=True, gate_failures=[FAIL], tokens_used=10, turn_token_budget=5))
    assert d.status is Status.ACCEPTANCE_FAILED


def test_all_proofs_passing_is_completed_acceptance_verified_and_no_check_is_plain_completed() -> None:
    assert decide(stopped(gate_checked=True)).reason == "acceptance verified"
    plain = decide(stopped())
    assert plain.status is Status.COMPLETED and plain.rule == "completed"


def test_a_budget_finish_rechecked_green_is_completed_and_red_stays_budget() -> None:
    spent = dict(made_tool_calls=True, round_iterations=1, tokens_used=10, turn_token_budget=5)
    assert decide(Facts(**spent, gate_checked=True)).rule == "budget_verified"  # type: ignore[arg-type]
    assert decide(Facts(**spent, gate_checked=True, gate_failures=[FAIL])).status is Status.BUDGET  # type: ignore[arg-type]
    iters = decide(Facts(made_tool_calls=True, round_iterations=3, max_tool_iterations=3, gate_checked=True))
    assert iters.status is Status.COMPLETED and "iteration budget" in iters.reason


def test_a_timeout_or_a_refused_proof_is_worded_as_what_happened() -> None:
    text = gate_nudge([GateFailure("a2", "s", "make", -1, "", "timeout"), GateFailure("a3", "s", "rm", -1, "", "denied")])
    assert "`make` timed out" in text and "`rm` was refused by the permission gate" in text


@pytest.mark.parametrize(("args", "want"), [
    ('"tests pass" -- pytest -q', ("tests pass", "pytest -q")),
    ("tests pass -- pytest -q -k 'a -- b'", ("tests pass", "pytest -q -k 'a -- b'")),
    ("-- make check", ("", "make check")),
])
def test_accept_lines_split_at_the_first_double_dash(args: str, want: tuple[str, str]) -> None:
    assert parse_accept(args) == want


def test_an_accept_line_without_a_command_says_how_to_write_one() -> None:
    with pytest.raises(AcceptanceError, match='/accept "what must hold" --'):
        parse_accept("tests pass")


def test_the_book_adds_replaces_by_command_drops_and_clears() -> None:
    saved: list[AcceptanceItem] = []

    def store(items: list[AcceptanceItem]) -> None:
        saved[:] = items

    book = AcceptanceBook(lambda: list(saved), store, config_items([{"statement": "lint", "command": "ruff ."}], "/w"))
    accept_command(book, '"tests pass" -- pytest -q')
    accept_command(book, '"the tests pass" -- pytest -q')
    assert [(i.id, i.statement, i.source) for i in book.items()] == [("c1", "lint", "config"),
                                                                      ("a1", "the tests pass", "user")]
    book.record({"a1": False, "c1": True})
    assert saved[0].last_passed is False and book.configured[0].last_passed is True
    assert "no acceptance item 'a9'" in accept_command(book, "drop a9")[0]
    accept_command(book, "clear")
    assert [i.id for i in book.items()] == ["c1"] and saved == []


def test_config_items_keep_those_for_this_workspace_and_skip_broken_entries() -> None:
    entries = [{"workspace": "/w", "statement": "a", "command": "true"}, {"workspace": "/other", "command": "x"},
               {"statement": "no command"}, "junk", {"command": "make"}]
    assert [(i.id, i.command) for i in config_items(entries, "/w/")] == [("c1", "true"), ("c5", "make")]


def test_a_project_config_cannot_add_acceptance_commands(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("plans:\n  acceptance:\n    - {statement: mine, command: 'true'}\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "ai-coding.yaml").write_text("plans:\n  acceptance:\n    - {statement: theirs, command: 'curl x'}\n")
    config = load_config(tmp_path / "ws", env={}, user_path=user)
    assert config.data["plans"]["acceptance"] == [{"statement": "mine", "command": "true"}]
    assert any("plans.acceptance" in w for w in config.warnings)
