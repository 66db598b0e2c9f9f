"""Nothing left behind: after a run and supervisor.idle_seconds, no process of ours is alive (found
by the runtime dir in its environment, as `ps e` shows it); the next run starts them again; an open
REPL, or a turn still running after its client went away, keeps them up; `up --stay` keeps them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.fake_model import FakeModelServer
from tests.support.cli_stack import cli
from tests.support.tmux import Tmux

IDLE = 2.0
SCRIPT = {"order": "first_match", "steps": [
    {"match": "slow one", "text": "Slow answer.", "delay_ms": 7000, "repeat": "forever"},
    {"text": "Quick answer.", "repeat": "forever"},
]}


@dataclass
class Box:
    base: Path
    env: dict[str, str]
    workspace: Path
    model: FakeModelServer

    @property
    def rdir(self) -> Path:
        return Path(self.env["AI_CODING_RUNTIME_DIR"])


@pytest.fixture
def box() -> Iterator[Box]:
    base = Path(tempfile.mkdtemp(prefix="aic-idle-", dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    model = FakeModelServer(SCRIPT).start()
    config = base / "config.yaml"
    config.write_text("models:\n  default: {provider: generic, model: fake-model, "
                      f"base_url: '{model.url}', api_key: x}}\nloop: {{harvest: false}}\n"
                      f"supervisor: {{idle_seconds: {IDLE}}}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_", "DEEPSEEK_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(base / "run"), AI_CODING_CONFIG=str(config), PROMPT_TOOLKIT_NO_CPR="1",
               TERM="xterm-256color")
    workspace = base / "ws"
    workspace.mkdir()
    try:
        yield Box(base, env, workspace, model)
    finally:
        cli(env, "down", timeout=60)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)


def ours(rdir: Path) -> list[str]:
    """`pid args` of every live process whose environment names ``rdir`` as its runtime dir."""
    marker = f"AI_CODING_RUNTIME_DIR={rdir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            args = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z" and "tmux" not in args:
            found.append(f"{entry} {args.strip()}")
    return found


def services_of(rdir: Path) -> list[str]:
    return [p for p in ours(rdir) if " serve " in p or "clients.cli.supervise" in p]


def names_of(rdir: Path) -> set[str]:
    """The supervisor and the services running for ``rdir``, by name."""
    return {"supervisor" if "clients.cli.supervise" in p else p.rsplit(" serve ", 1)[1].split()[0]
            for p in services_of(rdir)}


FOR_A_TURN = {"supervisor", "loop", "tools", "memory"}
"""What a turn runs: the gateway starts on demand only once an MCP server is configured."""


def wait_gone(rdir: Path, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not ours(rdir):
            return
        time.sleep(0.2)
    raise AssertionError(f"still running after {timeout} s: {ours(rdir)}")


def test_after_a_run_and_the_idle_time_nothing_of_ours_is_left_and_the_next_run_starts_again(box: Box) -> None:
    done = cli(box.env, "run", "-w", str(box.workspace), "hello")
    assert done.returncode == 0, done.stderr
    assert names_of(box.rdir) == FOR_A_TURN  # started by the run
    wait_gone(box.rdir)
    assert "idle for" in (box.rdir / "logs" / "supervisor.log").read_text()
    again = cli(box.env, "run", "-w", str(box.workspace), "hello again")
    assert again.returncode == 0, again.stderr
    assert "Quick answer." in again.stdout
    wait_gone(box.rdir)


def test_a_turn_whose_client_went_away_keeps_the_services_until_it_ends(box: Box) -> None:
    client = subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "run", "-w", str(box.workspace),
                               "the slow one"], env=box.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not box.model.chat_requests and time.monotonic() < deadline:
        time.sleep(0.1)
    assert box.model.chat_requests, "the turn never reached the model"
    client.send_signal(signal.SIGKILL)
    client.wait()
    time.sleep(IDLE + 3)  # well past the idle time: the turn (7 s model step) still runs in the loop
    assert names_of(box.rdir) == FOR_A_TURN
    wait_gone(box.rdir)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")
def test_an_open_repl_keeps_the_services_up_and_closing_it_lets_them_go(box: Box) -> None:
    term = Tmux(box.base / "tmux.sock", box.env, [sys.executable, "-m", "clients.cli.entry"], box.workspace)
    try:
        term.wait_for("/help for commands")
        term.line("hello")
        term.wait_for("Quick answer.")
        time.sleep(IDLE + 3)
        assert names_of(box.rdir) == FOR_A_TURN
    finally:
        term.close()
    wait_gone(box.rdir)


def test_up_stay_keeps_them_resident_until_down(box: Box) -> None:
    up = cli(box.env, "up", "--stay")
    assert up.returncode == 0, up.stderr
    assert "staying until `ai-coding down`" in up.stdout
    time.sleep(IDLE + 3)
    assert names_of(box.rdir) == FOR_A_TURN  # the gateway: on demand, and no MCP server is configured
    assert cli(box.env, "down").returncode == 0
    wait_gone(box.rdir)
    assert not (box.rdir / "stay").exists()
