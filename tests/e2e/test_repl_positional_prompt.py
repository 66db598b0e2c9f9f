"""`ai-coding "PROMPT"`, `ai-coding -c "PROMPT"` and `ai-coding -r ID "PROMPT"` open the real REPL
(in tmux) with that first message, as Claude Code's do; `-p` stays headless."""

from __future__ import annotations

import itertools
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")

SCRIPT = {"order": "first_match", "steps": [
    {"match": "fix the bug", "text": "Fixed the bug.", "repeat": "forever"},
    {"match": "now the tests", "text": "The tests pass now.", "repeat": "forever"},
    {"match": "go on", "text": "Going on from there.", "repeat": "forever"},
    {"text": "(unscripted)", "repeat": "forever"},
]}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-prompt-", []) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    stack.model.load_script(SCRIPT)
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


_SOCKETS = itertools.count()


def repl(stack: Stack, workspace: Path, *args: str) -> Tmux:
    # A socket of its own per REPL: a second one started on the socket of the one just closed could
    # land on a tmux server that was still going away, and its pane vanished (an empty screen).
    sock = stack.base / f"tmux-{next(_SOCKETS)}.sock"
    return Tmux(sock, stack.env, [sys.executable, "-m", "clients.cli.entry", *args], workspace)


def user_texts(stack: Stack) -> list[str]:
    """The user messages of the last chat request (without the environment block the last one carries)."""
    messages = stack.model.chat_requests[-1].body["messages"]
    return [str(m["content"]).split("\n\n<environment>")[0] for m in messages if m["role"] == "user"]


def test_a_positional_prompt_opens_the_repl_and_sends_it_first(stack: Stack, workspace: Path) -> None:
    term = repl(stack, workspace, "fix the bug")
    try:
        screen = term.wait_for("Fixed the bug.")
        assert "› fix the bug" in screen
        term.wait_for("● completed")
        term.line("now the tests")  # still the interactive session: the prompt takes the next line
        term.wait_for("The tests pass now.")
    finally:
        term.close()
    assert [t for t in user_texts(stack) if "fix the bug" in t or "now the tests" in t][-2:] == [
        "fix the bug", "now the tests"]


def test_continue_and_resume_with_a_prompt_go_on_in_that_session(stack: Stack, workspace: Path) -> None:
    first = cli(stack.env, "run", "-w", str(workspace), "fix the bug")
    assert first.returncode == 0, first.stderr
    term = repl(stack, workspace, "-c", "now the tests")
    try:
        screen = term.wait_for("The tests pass now.")
        session = re.search(r"session ([0-9a-f]{12})", screen)
        assert session is not None, screen
    finally:
        term.close()
    assert user_texts(stack)[-2:] == ["fix the bug", "now the tests"]
    term = repl(stack, workspace, "-r", session.group(1)[:8], "go on")
    try:
        term.wait_for("Going on from there.")
    finally:
        term.close()
    assert user_texts(stack)[-3:] == ["fix the bug", "now the tests", "go on"]


def test_print_mode_with_continue_stays_headless(stack: Stack, workspace: Path) -> None:
    assert cli(stack.env, "run", "-w", str(workspace), "fix the bug").returncode == 0
    done = cli(stack.env, "-w", str(workspace), "-c", "-p", "go on")
    assert done.returncode == 0, done.stderr
    assert "Going on from there." in done.stdout
    assert user_texts(stack)[-2:] == ["fix the bug", "go on"]


def test_a_bare_resume_lists_the_sessions_and_names_the_flag_once(stack: Stack, workspace: Path) -> None:
    assert cli(stack.env, "run", "-w", str(workspace), "fix the bug").returncode == 0
    listed = cli(stack.env, "-w", str(workspace), "-r")
    assert listed.returncode == 2
    last = listed.stderr.strip().splitlines()[-1]
    assert last == "ai-coding -r: pick a session: pass its id (or a unique prefix) to --resume", listed.stderr
    assert "fix the bug" in listed.stderr
