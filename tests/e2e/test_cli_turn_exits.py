"""How a turn's client ends, with real processes in a pseudo-terminal: ``run`` answered at its
approval prompt (stop, always), ``run`` interrupted by Ctrl-C, ``run`` repeated, and the REPL
started and quit repeatedly. Every exit is awaited with a deadline, so a client that hangs at
exit fails here instead of hanging the suite.

The supervisor and the four services are real processes; the model is the fake model server.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from clients.cli.runtime import wait_until  # noqa: E402
from services.fake_model import FakeModelServer  # noqa: E402
from tests.support.cli_stack import Stack, cli_stack  # noqa: E402

EXIT_SECONDS = 60


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-exits-", [{"text": "unused"}], ", max_retries: 0") as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


def _spawn(stack: Stack, workspace: Path, *args: str) -> Any:
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", *args], env=stack.env, cwd=str(workspace),
                          encoding="utf-8", dimensions=(40, 120), timeout=EXIT_SECONDS, codec_errors="replace")
    child.delaybeforesend = None
    return child


def _exit_code(child: Any) -> int:
    """Wait for the client to exit by itself (EOF, then the status) within the deadline."""
    try:
        child.expect(pexpect.EOF)
    except pexpect.TIMEOUT:
        child.kill(signal.SIGKILL)
        raise AssertionError(f"the client did not exit within {EXIT_SECONDS} s; it showed:\n{child.before}") from None
    child.close()
    assert child.exitstatus is not None, f"killed by signal {child.signalstatus}"
    return int(child.exitstatus)


def _script(model: FakeModelServer, command: str) -> None:
    model.load_script([{"name": "touch", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                {"name": "done", "text": "Done."}])


@pytest.mark.parametrize(("answer", "code", "created"), [("stop", 5, False), ("s", 5, False),
                                                          ("always", 0, True), ("n", 0, False)])
def test_run_at_its_approval_prompt_takes_the_same_keys_as_the_repl(
        stack: Stack, workspace: Path, answer: str, code: int, created: bool) -> None:
    _script(stack.model, "touch made.txt")
    child = _spawn(stack, workspace, "run", "-w", str(workspace), "make the file")
    child.expect_exact("allow bash? [y/a/n/s]")
    child.sendline(answer)
    assert _exit_code(child) == code, child.before
    assert (workspace / "made.txt").exists() is created


def test_ctrl_c_at_the_run_approval_prompt_stops_the_turn(stack: Stack, workspace: Path) -> None:
    _script(stack.model, "touch made.txt")
    child = _spawn(stack, workspace, "run", "-w", str(workspace), "make the file")
    child.expect_exact("allow bash? [y/a/n/s]")
    child.sendintr()
    assert _exit_code(child) == 5
    assert not (workspace / "made.txt").exists()


def test_ctrl_c_during_a_run_interrupts_the_turn_and_exits_5(stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"name": "stall", "fault": {"kind": "stall", "seconds": 8},
                       "tool_calls": [{"name": "write", "arguments": {"path": "late.txt", "content": "late\n"}}]},
                      {"name": "done", "text": "Wrote it."}])
    seen = len(stack.model.chat_requests)
    child = _spawn(stack, workspace, "run", "--auto-approve", "-w", str(workspace), "write late.txt")
    assert wait_until(lambda: len(stack.model.chat_requests) > seen, 60)  # the turn is in the model's stall
    child.sendintr()
    child.expect_exact("interrupting the turn")
    assert _exit_code(child) == 5
    assert not (workspace / "late.txt").exists()


def test_runs_one_after_another_each_exit_by_themselves(stack: Stack, workspace: Path) -> None:
    for n in range(3):
        stack.model.load_script([{"name": f"answer-{n}", "text": f"answer number {n}"}])
        child = _spawn(stack, workspace, "run", "-w", str(workspace), f"question {n}")
        child.expect_exact(f"answer number {n}")
        assert _exit_code(child) == 0


def test_the_repl_starts_shows_its_prompt_and_quits_cleanly_again_and_again(stack: Stack, workspace: Path) -> None:
    for _ in range(4):
        child = _spawn(stack, workspace, "-w", str(workspace))
        try:
            child.expect_exact("/help for commands")
            child.expect_exact("›")
        except (pexpect.EOF, pexpect.TIMEOUT) as err:
            raise AssertionError(f"the REPL did not reach its prompt ({type(err).__name__}):\n{child.before}") from None
        child.sendline("/quit")
        assert _exit_code(child) == 0
