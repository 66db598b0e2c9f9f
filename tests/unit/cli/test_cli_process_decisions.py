"""Pure decisions behind the CLI's process control: global options, stopping a turn, the start race."""

from __future__ import annotations

import signal

from clients.cli import exit_codes
from clients.cli.control import lost_start_race
from clients.cli.global_options import Leaf, default_map_for, global_problem
from clients.cli.turn import stop_reason

RUN = Leaf(("run",), frozenset({"prompt", "workspace", "session", "timeout"}), frozenset())
LIST = Leaf(("sessions", "list"), frozenset({"workspace", "as_json"}), frozenset())


def test_a_global_workspace_becomes_the_nested_default_of_the_command_it_precedes() -> None:
    assert default_map_for({"workspace": "/w", "session": ""}, LIST) == {"sessions": {"list": {"workspace": "/w"}}}
    assert default_map_for({"workspace": "/w", "session": "s1"}, RUN) == {"run": {"workspace": "/w", "session": "s1"}}


def test_a_global_option_the_command_lacks_is_refused_naming_the_flag_and_command() -> None:
    assert global_problem({"workspace": "", "session": "s1"}, LIST) == (
        "--session does not apply to `ai-coding sessions list`; leave it out")
    assert global_problem({"workspace": "/w", "session": ""}, LIST) is None


def test_the_same_option_before_and_after_the_command_is_refused() -> None:
    twice = Leaf(RUN.path, RUN.params, frozenset({"workspace"}))
    assert global_problem({"workspace": "/w", "session": ""}, twice) == (
        "-w/--workspace was given both before and after `run`; pass it once")


def test_a_turn_is_stopped_on_a_signal_before_its_deadline_and_on_the_deadline() -> None:
    assert stop_reason(10.0, 20.0, None, 5.0) is None
    assert stop_reason(10.0, None, None, None) is None
    term = stop_reason(10.0, 20.0, signal.SIGTERM, 5.0)
    assert term is not None and term.exit_code == 143 and "SIGTERM" in term.message
    hup = stop_reason(10.0, None, signal.SIGHUP, None)
    assert hup is not None and hup.exit_code == 129
    late = stop_reason(20.0, 20.0, None, 5.0)
    assert late is not None and late.exit_code == exit_codes.TIMEOUT and "--timeout (5 s)" in late.message


def test_only_an_exited_supervisor_with_the_lock_held_elsewhere_lost_the_race() -> None:
    assert lost_start_race(2, lock_held=True)
    assert not lost_start_race(2, lock_held=False)  # it failed on its own: a real start-up failure
    assert not lost_start_race(None, lock_held=True)  # still running: it holds the lock itself
