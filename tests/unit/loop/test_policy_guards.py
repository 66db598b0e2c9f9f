from __future__ import annotations

import pytest

from services.kernel.errors import ConfigError
from services.loop.policy.guards import (
    DuplicateCallGuard,
    StrategyGate,
    canonical_call,
    check_bash_policy,
    check_path_escape,
    compile_bash_policy,
    gate_for_bash,
    path_escapes,
)
from services.loop.policy.settings import BashPolicy


def test_canonical_call_ignores_key_order() -> None:
    assert canonical_call("read", {"a": 1, "b": 2}) == canonical_call("read", {"b": 2, "a": 1})
    assert canonical_call("read", {"a": 1}) != canonical_call("glob", {"a": 1})


def test_a_duplicate_call_is_refused_on_the_third_try_naming_the_earlier_call() -> None:
    guard = DuplicateCallGuard(threshold=2)
    assert guard.check("read", {"path": "a.py"}, "c1") is None
    assert guard.check("read", {"path": "a.py"}, "c2") is None
    refusal = guard.check("read", {"path": "a.py"}, "c3")
    assert refusal is not None
    assert refusal.code == "duplicate_call"
    assert refusal.data["earlier_call_id"] == "c2"
    assert "c2" in refusal.message


def test_different_arguments_are_not_duplicates() -> None:
    guard = DuplicateCallGuard(threshold=1)
    assert guard.check("read", {"path": "a.py"}, "c1") is None
    assert guard.check("read", {"path": "b.py"}, "c2") is None


def test_a_successful_edit_makes_repeated_reads_legitimate_again() -> None:
    guard = DuplicateCallGuard(threshold=2)
    for n in range(2):
        assert guard.check("read", {"path": "a.py"}, f"r{n}") is None
    guard.record_success("edit", {"path": "a.py"})
    assert guard.check("read", {"path": "a.py"}, "r3") is None


def test_the_same_command_three_times_is_refused_even_though_bash_is_an_action() -> None:
    guard = DuplicateCallGuard(threshold=2)
    for n in range(2):
        assert guard.check("bash", {"command": "pytest"}, f"b{n}") is None
        guard.record_success("bash", {"command": "pytest"})
    assert guard.check("bash", {"command": "pytest"}, "b3") is not None


def test_threshold_zero_turns_the_duplicate_guard_off() -> None:
    guard = DuplicateCallGuard(threshold=0)
    assert all(guard.check("read", {}, f"c{n}") is None for n in range(5))


def test_two_all_failed_steps_earn_one_strategy_nudge() -> None:
    gate = StrategyGate(failed_streak_threshold=2)
    assert gate.observe_step([(False, "tool_error")]) is None
    nudge = gate.observe_step([(False, "tool_error"), (False, "not_found")])
    assert nudge is not None and nudge.startswith("[strategy-gate]")
    assert gate.observe_step([(False, "x")]) is None, "the streak restarts after a nudge"


def test_one_success_in_a_step_breaks_the_failure_streak() -> None:
    gate = StrategyGate(failed_streak_threshold=2)
    gate.observe_step([(False, "e")])
    assert gate.observe_step([(True, ""), (False, "e")]) is None
    assert gate.observe_step([(False, "e")]) is None


def test_cancelled_by_user_is_not_a_failure() -> None:
    gate = StrategyGate(failed_streak_threshold=2, stall_iterations=2)
    gate.observe_step([(False, "e")])
    assert gate.observe_step([(False, "cancelled_by_user")]) is None
    assert gate.failed_streak == 1
    assert not gate.stalled


def test_strategy_nudges_are_capped_per_turn() -> None:
    gate = StrategyGate(failed_streak_threshold=1, max_nudges=2, stall_iterations=0)
    nudges = [gate.observe_step([(False, "e")]) for _ in range(5)]
    assert sum(n is not None for n in nudges) == 2


def test_a_turn_that_made_progress_is_not_stalled_by_a_later_failure_streak() -> None:
    gate = StrategyGate(failed_streak_threshold=2, stall_iterations=3)
    gate.observe_step([(True, "")])
    for _ in range(5):
        gate.observe_step([(False, "e")])
    assert not gate.stalled


def test_steps_with_attempts_and_zero_successes_stall_the_turn() -> None:
    gate = StrategyGate(failed_streak_threshold=2, stall_iterations=3)
    for _ in range(2):
        gate.observe_step([(False, "e")])
    assert not gate.stalled
    gate.observe_step([(False, "e")])
    assert gate.stalled


def test_text_only_steps_do_not_count_toward_a_stall() -> None:
    gate = StrategyGate(stall_iterations=1)
    gate.observe_step([])
    assert not gate.stalled


def test_bash_policy_deny_beats_confirm() -> None:
    policy = compile_bash_policy(BashPolicy(deny=[r"\bterraform\s+apply\b"], confirm=[r"^git push", "terraform"]))
    assert check_bash_policy("terraform apply -auto-approve", policy) == ("deny", r"\bterraform\s+apply\b")
    assert check_bash_policy("terraform plan", policy) == ("confirm", "terraform")
    assert check_bash_policy("git push origin main", policy)[0] == "confirm"
    assert check_bash_policy("ls", policy) == ("", "")


def test_an_invalid_bash_policy_pattern_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"ai\.bash_policy\.deny"):
        compile_bash_policy(BashPolicy(deny=["(unclosed"]))


def test_paths_outside_the_workspace_are_found_but_system_paths_are_not() -> None:
    cmd = "cat /home/other/secrets.txt /work/ws/a.py > /dev/null && ls /usr/lib && cp x /srv/data/"
    assert path_escapes(cmd, "/work/ws") == ["/home/other/secrets.txt", "/srv/data"]


def test_a_path_that_only_shares_a_prefix_with_the_workspace_escapes() -> None:
    assert path_escapes("cat /work/ws2/file", "/work/ws") == ["/work/ws2/file"]
    assert path_escapes("cat /work/ws/../other/f", "/work/ws") == ["/work/other/f"]


def test_path_escape_is_observed_by_default_and_refused_when_strict() -> None:
    paths, refusal = check_path_escape("cat /home/u/.ssh/id_rsa", "/work/ws", strict=False)
    assert paths == ["/home/u/.ssh/id_rsa"] and refusal is None
    _, refusal = check_path_escape("cat /home/u/.ssh/id_rsa", "/work/ws", strict=True)
    assert refusal is not None and refusal.code == "path_outside_workspace"


def test_redirect_targets_outside_the_workspace_escape() -> None:
    assert path_escapes("echo hi > /home/u/.bashrc", "/work/ws") == ["/home/u/.bashrc"]


def test_bash_that_writes_files_is_gated_as_an_edit() -> None:
    assert gate_for_bash("sed -i s/a/b/ x.py") == "edit"
    assert gate_for_bash("echo hi > out.txt") == "edit"
    assert gate_for_bash("grep -rn foo .") == "bash"
    assert gate_for_bash("sudo rm -rf /") == "deny"
