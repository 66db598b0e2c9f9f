"""One interactive ai-coding command in a detached tmux session on a private server socket."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

TIMEOUT = 40


class Tmux:
    """``argv`` running in a 120x40 tmux pane, with ``env``; ``socket`` keeps the server private."""

    def __init__(self, socket: Path, env: dict[str, str], argv: Sequence[str], cwd: Path) -> None:
        self.socket = socket
        self.env = env
        # The pane stays after the command exits, so its last screen can still be read.
        self._tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "-c", str(cwd),
                   shlex.join(argv) + "; echo \"[exit $?]\"; sleep 600")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], env=self.env, capture_output=True,
                              text=True, timeout=20, check=False)
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-300")

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
        if text:
            self._tmux("send-keys", "-t", "t", "-l", text)
        self._tmux("send-keys", "-t", "t", "Enter")

    def close(self) -> None:
        self._tmux("kill-server")
