"""The real REPL in a detached tmux session on a private server socket: what a user sees, read with
``capture-pane`` (plain, or with its colours)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli_stack import Stack

TIMEOUT = 40


class TmuxRepl:
    """One REPL (``ai-coding -w WORKSPACE``) in tmux, 120x40."""

    def __init__(self, stack: Stack, workspace: Path, name: str = "repl", args: tuple[str, ...] = ()) -> None:
        """``args``: more of the command line (``-c``, ``--resume ID``)."""
        self.socket = stack.base / f"tmux-{workspace.name}-{name}.sock"  # one server per REPL
        self.env = stack.env
        self.name = name
        command = shlex.join([sys.executable, "-m", "clients.cli.entry", "-w", str(workspace), *args])
        self._tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", str(workspace), command)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], env=self.env, capture_output=True, text=True,
                              timeout=20, check=False)
        return done.stdout

    def screen(self, colours: bool = False) -> str:
        """The pane and its scrollback (``colours``: with the SGR escapes tmux keeps)."""
        return self._tmux("capture-pane", "-p", "-J", *(["-e"] if colours else []), "-t", self.name, "-S", "-500")

    def wait_for(self, text: str, after: int = 0, timeout: float = TIMEOUT) -> str:
        """Wait until ``text`` shows at least ``after + 1`` times; returns the screen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) > after:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed; the screen was:\n{screen}")

    def line(self, text: str) -> None:
        """Type ``text`` and Enter."""
        self._tmux("send-keys", "-t", self.name, "-l", text)
        self._tmux("send-keys", "-t", self.name, "Enter")

    def key(self, *keys: str) -> None:
        """Press keys by their tmux names (``Up``, ``Enter``, ``Escape``)."""
        for key in keys:
            self._tmux("send-keys", "-t", self.name, key)

    def close(self) -> None:
        self._tmux("kill-server")
