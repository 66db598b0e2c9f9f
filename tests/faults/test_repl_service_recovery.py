"""An open REPL outlives its services: the supervisor killed (its services go with it), and
separately the loop killed, each while a turn runs. The REPL starts what it needs again by itself,
offers the interrupted prompt back on its input line, and the session keeps its permission mode
and its always-allowed list. Real supervisor, services and REPL (in tmux); the fake model."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.cli.repl.recovery import OFFERED
from clients.cli.runtime import pid_alive, read_pid, read_state, wait_until
from tests.support.cli_stack import Stack, cli_stack
from tests.support.tmux_repl import TmuxRepl

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")

FAST_RESTARTS = "supervisor: {backoff_initial_seconds: 0.2, backoff_max_seconds: 0.5, stable_seconds: 0.5}\n"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-recover-", [{"text": "unused", "repeat": "forever"}], extra_config=FAST_RESTARTS) as running:
        yield running


@pytest.fixture
def repl(stack: Stack) -> Iterator[TmuxRepl]:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    term = TmuxRepl(stack, workspace)
    term.wait_for("/help for commands")
    yield term
    term.close()


def _rdir(stack: Stack) -> Path:
    return Path(stack.env["AI_CODING_RUNTIME_DIR"])


def _loop_pid(stack: Stack) -> int | None:
    """The loop's pid, None while the supervisor waits to restart it."""
    state = read_state(_rdir(stack))
    svc = state.services.get("loop") if state else None
    return int(svc.pid) if svc is not None and svc.pid else None


def _grant_always_then_auto(stack: Stack, repl: TmuxRepl) -> None:
    """An always-allowed grant (answered `a` at an approval), then /permissions auto."""
    stack.model.load_script([
        {"match": "make it", "tool_calls": [{"name": "bash", "arguments": {"command": "touch made.txt"}}]},
        {"text": "Made."},
    ])
    repl.line("make it")
    repl.wait_for("approve? [y/a/n/s]")
    repl.line("a")
    repl.wait_for("● completed")
    repl.line("/permissions auto")
    screen = repl.wait_for("permissions: auto")
    assert "always allowed: none" not in screen.rsplit("permissions: auto", 1)[1].splitlines()[0]


def _long_turn(stack: Stack, repl: TmuxRepl) -> None:
    stack.model.load_script([
        {"match": "long job", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
        {"text": "never reached", "repeat": "forever"},
    ])
    repl.line("long job")
    repl.wait_for("Running · sleep 60")


def _recovered_with_the_prompt_and_the_permissions(stack: Stack, repl: TmuxRepl, before: str) -> None:
    screen = repl.wait_for(OFFERED, timeout=90)
    assert screen.rstrip().splitlines()[-1].endswith("› long job"), screen[-600:]  # the prompt, offered again
    repl._tmux("send-keys", "-t", repl.name, "C-u")  # not resent here: the next turn is another one
    stack.model.load_script([{"match": "still there", "text": "Back again."}])
    repl.line("still there?")
    repl.wait_for("Back again.")
    repl.line("/permissions")
    screen = repl.wait_for("permissions: auto", after=1)
    assert screen.rsplit("permissions: auto", 1)[1].splitlines()[0] == before


@pytest.mark.slow
def test_the_supervisor_killed_mid_turn_the_repl_restarts_it_and_offers_the_prompt(
        stack: Stack, repl: TmuxRepl) -> None:
    _grant_always_then_auto(stack, repl)
    before = repl.screen().rsplit("permissions: auto", 1)[1].splitlines()[0]
    _long_turn(stack, repl)
    supervisor = read_pid(_rdir(stack))
    assert supervisor and pid_alive(supervisor)
    os.kill(supervisor, signal.SIGKILL)
    _recovered_with_the_prompt_and_the_permissions(stack, repl, before)
    assert read_pid(_rdir(stack)) not in (None, supervisor)  # a new supervisor, started by the REPL


@pytest.mark.slow
def test_the_loop_killed_mid_turn_the_repl_recovers_and_keeps_the_sessions_permissions(
        stack: Stack, repl: TmuxRepl) -> None:
    _grant_always_then_auto(stack, repl)
    before = repl.screen().rsplit("permissions: auto", 1)[1].splitlines()[0]
    _long_turn(stack, repl)
    loop = _loop_pid(stack)
    assert loop is not None
    os.kill(loop, signal.SIGKILL)
    assert wait_until(lambda: _loop_pid(stack) not in (None, loop), 60)
    _recovered_with_the_prompt_and_the_permissions(stack, repl, before)


@pytest.mark.slow
def test_an_idle_repl_whose_supervisor_died_brings_it_back_and_answers_the_next_prompt_without_an_error(
        stack: Stack, repl: TmuxRepl) -> None:
    stack.model.load_script([{"match": "hello", "text": "Hello back."}])
    supervisor, loop = read_pid(_rdir(stack)), _loop_pid(stack)
    assert supervisor and pid_alive(supervisor) and loop is not None
    os.kill(supervisor, signal.SIGKILL)
    # Its services go with it (SIGTERM, then they drain): typed before the loop is gone, the old loop
    # could still take the turn and answer it, and no supervisor would be needed.
    assert wait_until(lambda: not pid_alive(loop), 60), "the loop outlived its supervisor"
    repl.line("hello after the crash")  # sent while the services are down: resent once they are back
    screen = repl.wait_for("Hello back.", timeout=90)
    assert "error:" not in screen, screen
    assert read_pid(_rdir(stack)) not in (None, supervisor)
