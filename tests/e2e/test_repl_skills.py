"""A skill the model proposes waits for review; the user approves it in the real REPL (in tmux)
and it enters the catalog of the next request."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli_stack

TIMEOUT = 40

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")


class Tmux:
    """One REPL in a detached tmux session on a private server socket."""

    def __init__(self, stack: Stack, workspace: Path) -> None:
        self.socket = stack.base / "tmux.sock"
        self.env = stack.env
        command = shlex.join([sys.executable, "-m", "clients.cli.entry", "-w", str(workspace)])
        self._tmux("new-session", "-d", "-s", "repl", "-x", "120", "-y", "40", "-c", str(workspace), command)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], env=self.env, capture_output=True, text=True,
                              timeout=20, check=False)
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "repl", "-S", "-300")

    def wait_for(self, text: str, after: int = 0) -> str:
        """Wait until ``text`` shows at least ``after + 1`` times; returns the screen."""
        deadline = time.monotonic() + TIMEOUT
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) > after:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed; the screen was:\n{screen}")

    def line(self, text: str) -> None:
        self._tmux("send-keys", "-t", "repl", "-l", text)
        self._tmux("send-keys", "-t", "repl", "Enter")

    def close(self) -> None:
        self._tmux("kill-server")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-skills-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def repl(stack: Stack) -> Iterator[Tmux]:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    term = Tmux(stack, workspace)
    term.wait_for("/help for commands")
    yield term
    term.close()


def test_a_pending_skill_approved_in_the_repl_enters_the_catalog(stack: Stack, repl: Tmux) -> None:
    stack.model.load_script([
        {"match": "remember", "tool_calls": [{"name": "skill_propose", "arguments": {
            "name": "flaky-tests", "description": "Rerun flaky tests without random order first",
            "body": "Run pytest -p no:randomly before anything else."}}]},
        {"match": "proposed skill", "text": "I proposed a skill for that."},
        {"match": "next task", "text": "Using what I know."},
    ])
    repl.line("remember how we deal with flaky tests")
    repl.wait_for("I proposed a skill for that.")
    repl.wait_for("● completed")
    pending = Path(stack.env["XDG_DATA_HOME"]) / "ai-coding" / "skills" / ".pending" / "flaky-tests"
    assert (pending / "SKILL.md").is_file()
    repl.line("/skills")
    screen = repl.wait_for("pending review")
    assert "flaky-tests: Rerun flaky tests without random order first" in screen
    assert "approve: /skills approve NAME" in screen
    repl.line("/skills approve flaky-tests")
    repl.wait_for("approved flaky-tests")
    assert not pending.exists()
    repl.line("next task please")
    repl.wait_for("Using what I know.")
    system = stack.model.chat_requests[-1].body["messages"][0]["content"]
    assert "- flaky-tests: Rerun flaky tests without random order first" in system
    earlier = stack.model.chat_requests[0].body["messages"][0]["content"]
    assert "flaky-tests" not in earlier
    repl.wait_for("skills changed (+flaky-tests)")
