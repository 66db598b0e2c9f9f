"""Pure decisions behind the CLI's process control: global options, stopping a turn, the start race."""

from __future__ import annotations

import signal
import subprocess
import sys

from clients.cli import exit_codes
from clients.cli.control import lost_start_race
from clients.cli.global_options import Leaf, default_map_for, global_problem
from clients.cli.runtime import ServiceState, SupervisorState, left_by_a_dead_supervisor
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


def test_the_services_a_dead_supervisor_recorded_are_told_from_a_reused_pid_and_a_gone_one() -> None:
    # A real process whose command line is a service's (`... serve loop`), one that is not (a pid the
    # system gave to someone else), and one that exited.
    code = "import time; time.sleep(60)"
    loop = subprocess.Popen([sys.executable, "-c", code, "serve", "loop"])
    other = subprocess.Popen([sys.executable, "-c", code, "something", "tools"])
    gone = subprocess.Popen([sys.executable, "-c", "pass", "serve", "memory"])
    gone.wait(timeout=30)
    try:
        state = SupervisorState(pid=gone.pid, started_at=0.0, runtime_dir="/nowhere", services={
            "loop": ServiceState(pid=loop.pid), "tools": ServiceState(pid=other.pid),
            "memory": ServiceState(pid=gone.pid), "mcp_gateway": ServiceState(pid=None)})
        names = ["loop", "tools", "memory", "mcp_gateway"]
        assert left_by_a_dead_supervisor(state, names) == ["loop"]
        assert left_by_a_dead_supervisor(state, ["tools", "memory"]) == []
        assert left_by_a_dead_supervisor(None, names) == []
    finally:
        for proc in (loop, other):
            proc.kill()
            proc.wait(timeout=30)
