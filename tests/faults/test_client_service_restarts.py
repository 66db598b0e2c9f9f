"""`ai-coding run --json --session SID` started around a kill -9 and restart of each service: every
client ends (no hang), and one that hangs is shown with every thread's stack before it is stopped.

A client was once seen hanging after the memory service restarted (the loop's trace had the turn
done in 50 ms; the client printed nothing) and another blocked on a futex at exit. Each run here
gets a deadline; past it the test dumps the client's stacks (py-spy when installed, else the
interpreter's own faulthandler on SIGABRT, which ``PYTHONFAULTHANDLER`` turns on) and fails
with them. Real supervisor, services and CLI processes; the fake model.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clients.cli.runtime import pid_alive, read_state, wait_until
from services.kernel.channels import check_health
from services.kernel.endpoints import PROTO_SERVICE, parse_endpoint
from tests.support.cli_stack import Stack, cli, cli_stack

SERVICES = ("memory", "loop", "tools", "mcp_gateway")
# When the client starts after the kill: while the service is down, as it comes back (the
# original hang: 1.6 s after the memory service restarted), and once it serves again.
DELAYS = (0.0, 0.4, 1.0, 1.6, 2.5)
RUN_DEADLINE = 90.0  # a run here takes ~1 s; a loaded CI machine gets a wide margin
# Restart fast so the rounds do not wait on the supervisor's backoff.
FAST_RESTARTS = "supervisor: {backoff_initial_seconds: 0.2, backoff_max_seconds: 0.5, stable_seconds: 0.5}\n"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-restarts-", [{"text": "still answering", "repeat": "forever"}],
                   extra_config=FAST_RESTARTS) as running:
        yield running


def _stacks_of(pid: int) -> str:
    """Every thread's stack of a hung client: py-spy's (with native frames) when it is installed."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if Path(spy).exists():
        done = subprocess.run([spy, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=60, check=False)
        if done.returncode == 0:
            return done.stdout
    return "(py-spy is not installed: see the faulthandler dump in the client's stderr)"


def _run_client(stack: Stack, workspace: Path, session_id: str,
                during: Callable[[], None] = lambda: None) -> tuple[int, str, str]:
    """One `run --json --session` (``during()`` is called once it started): (exit code, stdout,
    stderr); a client past its deadline fails the test with its stacks."""
    env = {**stack.env, "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "run", "--json", "--session", session_id,
                             "-w", str(workspace), "are you there?"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    during()
    try:
        out, err = proc.communicate(timeout=RUN_DEADLINE)
    except subprocess.TimeoutExpired:
        dump = _stacks_of(proc.pid)
        proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's Python stack, then it dies
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"`run --session` did not end within {RUN_DEADLINE:g} s\n--- stacks ---\n{dump}\n"
                    f"--- stdout ---\n{out[-2000:]}\n--- stderr ---\n{err[-6000:]}")
    return proc.returncode, out, err


def _serving(stack: Stack, name: str, old_pid: int | None) -> bool:
    """``name`` serves from a process other than ``old_pid``. The health check comes first: memory
    and the gateway run on demand, and a call is what brings them back after a kill."""
    rdir = Path(stack.env["AI_CODING_RUNTIME_DIR"])
    state = read_state(rdir)
    svc = state.services.get(name) if state else None
    if svc is None:
        return False
    endpoint = parse_endpoint(name, svc.endpoint, None)
    if check_health(endpoint, PROTO_SERVICE[name], timeout=1.0) != "SERVING":
        return False
    state = read_state(rdir)
    return state is not None and state.services[name].pid not in (None, old_pid)


def _session(stack: Stack) -> tuple[Path, str]:
    """A workspace with one finished session in it."""
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    first = cli(stack.env, "run", "--json", "-w", str(workspace), "hello")
    assert first.returncode == 0, first.stderr
    return workspace, json.loads(first.stdout.splitlines()[0])["sessionId"]


def _service_pid(stack: Stack, service: str) -> int:
    """The pid of ``service``, started first if it waits on demand (the gateway: no turn here uses it)."""
    assert wait_until(lambda: _serving(stack, service, None), 60), f"{service} does not serve"
    state = read_state(Path(stack.env["AI_CODING_RUNTIME_DIR"]))
    assert state is not None
    pid = state.services[service].pid
    assert pid is not None and pid_alive(pid)
    return pid


@pytest.mark.slow
@pytest.mark.parametrize("service", SERVICES)
def test_run_started_around_a_service_restart_always_ends_with_its_answer(stack: Stack, service: str) -> None:
    workspace, session_id = _session(stack)
    for delay in DELAYS:
        victim = _service_pid(stack, service)
        os.kill(victim, signal.SIGKILL)
        time.sleep(delay)
        code, out, err = _run_client(stack, workspace, session_id)
        # The kill came before the client started: it waits for a restarting loop, and a turn
        # that needs no tools or memory does not notice the others are gone.
        assert code == 0, f"kill -9 of {service}, run {delay:g} s later: exit {code}\n{err}"
        events = [json.loads(line) for line in out.splitlines()]
        assert events[-1]["turnFinished"]["status"] == "TURN_STATUS_COMPLETED", events[-1]
        assert events[-1]["turnFinished"]["text"] == "still answering"
        assert wait_until(lambda old=victim: _serving(stack, service, old), 60), f"{service} did not come back"


@pytest.mark.slow
@pytest.mark.parametrize("service", SERVICES)
def test_run_whose_service_dies_while_it_runs_ends_and_says_why(stack: Stack, service: str) -> None:
    workspace, session_id = _session(stack)
    for delay in (0.1, 0.5, 1.0):  # while the client starts, opens the session, streams the turn
        victim = _service_pid(stack, service)

        def kill(victim: int = victim, delay: float = delay) -> None:
            time.sleep(delay)
            os.kill(victim, signal.SIGKILL)

        code, _, err = _run_client(stack, workspace, session_id, during=kill)
        if service in ("memory", "mcp_gateway"):  # this turn does not use them: it must not notice
            assert code == 0, f"kill -9 of {service} {delay:g} s into the run: exit {code}\n{err}"
        else:  # the turn may be lost, but the client ends with one line saying why, never a traceback
            assert code in (0, 1, 3), f"kill -9 of {service} {delay:g} s into the run: exit {code}\n{err}"
            assert code == 0 or err.strip().splitlines()[-1].startswith("ai-coding run: "), err
            assert "Traceback" not in err, err
        assert wait_until(lambda old=victim: _serving(stack, service, old), 60), f"{service} did not come back"
