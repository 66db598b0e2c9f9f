"""What `ai-coding run` shows, in a pseudo-terminal (pexpect) and redirected to a file: an edit's diff
(coloured on a terminal, plain without), a failure before any work as one line, and output without
a terminal that no width cuts. Real services via `ai-coding up`; the model is the fake model server."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from clients.cli import exit_codes  # noqa: E402
from tests.support.cli_stack import Stack, cli_stack  # noqa: E402
from tests.support.cli_stack import cli as _cli  # noqa: E402

TIMEOUT = 60
GREEN = "\x1b[32m"
RED = "\x1b[31m"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-screen-", [{"text": "unused"}], ", max_retries: 0") as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    path = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (path / "calc.py").write_text("a = 1\nb = 2\n")
    return path


def _edit_script(stack: Stack) -> None:
    stack.model.load_script([
        {"tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "b = 2",
                                                       "new_string": "b = 3\nc = 4"}}]},
        {"text": "Changed b and added c."},
    ])


def _pty_run(stack: Stack, workspace: Path, *args: str) -> tuple[str, int]:
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "run", "-w", str(workspace), *args],
                          env=stack.env, cwd=str(workspace), encoding="utf-8", dimensions=(40, 120),
                          timeout=TIMEOUT, codec_errors="replace")
    try:
        child.expect(pexpect.EOF)
    except pexpect.TIMEOUT:
        child.kill(signal.SIGKILL)
        raise AssertionError(f"run did not exit; it showed:\n{child.before}") from None
    child.close()
    return str(child.before), int(child.exitstatus if child.exitstatus is not None else -1)


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


def test_an_edit_under_auto_approve_shows_its_diff_coloured_on_a_terminal(stack: Stack, workspace: Path) -> None:
    _edit_script(stack)
    out, code = _pty_run(stack, workspace, "--auto-approve", "change b")
    assert code == 0, out
    assert f"{RED}    -b = 2" in out and f"{GREEN}    +b = 3" in out and f"{GREEN}    +c = 4" in out
    assert "✓ Editing · calc.py · Edited calc.py: 1 replacement. · +2 -1" in _plain(out)


def test_an_edit_without_a_terminal_shows_the_same_diff_as_plain_text(stack: Stack, workspace: Path) -> None:
    _edit_script(stack)
    done = _cli(stack.env, "run", "--auto-approve", "-w", str(workspace), "change b")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    lines = done.stdout.splitlines()
    at = lines.index("    @@ -1,2 +1,3 @@")
    assert lines[at + 1:at + 5] == ["     a = 1", "    -b = 2", "    +b = 3", "    +c = 4"]
    footer = next(line for line in lines if line.startswith("● completed"))
    assert "$" not in footer and " in / " in footer  # no price set for fake-model: tokens, no dollars


def test_a_401_on_the_first_request_is_one_line_with_the_fix_and_exit_1(stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"fault": "auth_error"}])
    out, code = _pty_run(stack, workspace, "hello")
    assert code == exit_codes.FAILED
    shown = [line for line in _plain(out).splitlines() if line.strip()]
    assert len(shown) == 1, shown
    assert shown[0].startswith("error: model auth:") and "check models.default.api_key" in shown[0]
    assert "Handoff" not in out and "Last failure" not in out


def test_run_redirected_to_a_file_cuts_no_line(stack: Stack, workspace: Path) -> None:
    message = "the upstream said no because " + "quota-exceeded-for-this-key " * 10 + "(end)"
    assert len(message) >= 300
    stack.model.load_script([
        {"tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}}],
         "usage": {"prompt_tokens": 123_456_789, "completion_tokens": 98_765, "cached_tokens": 100_000_000}},
        {"fault": {"kind": "http_error", "status": 400, "message": message, "code": "quota"}},
    ])
    env: dict[str, Any] = {k: v for k, v in stack.env.items() if k not in ("COLUMNS", "LINES")}
    out_file = workspace / "out.txt"
    with out_file.open("w") as sink:
        done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "run", "-w", str(workspace), "read it"],
                              env=env, stdout=sink, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              timeout=TIMEOUT, check=False)
    assert done.returncode == exit_codes.FAILED, done.stderr
    text = out_file.read_text()
    assert "…" not in text
    footer = next(line for line in text.splitlines() if line.startswith("● failed"))
    assert len(footer) > 200 and message in footer  # the reason whole, on the footer's one line
    assert re.search(r"· 123\.5M in / 98\.8k out · cache 81% · 1 step · [\d.]+m?s", footer), footer
    assert any(message in line for line in text.splitlines() if line.startswith("Stopped because"))


def test_a_six_second_command_shows_a_ticking_elapsed_time_and_the_interrupt_key(
        stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 6"}}]},
                             {"text": "Slept."}])
    out, code = _pty_run(stack, workspace, "--auto-approve", "wait a bit")
    assert code == 0, out
    shown = _plain(out)
    for second in (2, 4):
        assert f"⋯ step 1 · Running · sleep 6 · {second}s · turn " in shown, shown
    assert "Ctrl-C interrupts" in shown
    assert "⋯" not in shown.rsplit("\n", 3)[-2]  # erased: the last lines are the answer and the footer


def test_run_shows_the_continue_of_an_auto_continue_round(stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"text": "The first half of the answer", "finish_reason": "length"},
                             {"text": " and the rest."}])
    done = _cli(stack.env, "run", "-w", str(workspace), "answer at length")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  [continue] Your last answer was cut off at the output token limit." in done.stdout.splitlines()
    assert "and the rest." in done.stdout
