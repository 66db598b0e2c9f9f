"""The CLI's process control with real processes: concurrent cold starts, ``run --timeout`` and
signals stopping the client's own turn, and ``down``/``status``/``logs`` with a broken config.

The CLI runs as a subprocess, the supervisor and the four services are real processes, and the
model is the fake model server (the only stand-in).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import descendants, pid_alive, wait_until
from services.fake_model import FakeModelServer

SERVICES = ["loop", "tools", "memory", "mcp_gateway"]


def cli(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False, cwd=cwd)


def cli_bg(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "clients.cli.entry", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def write_config(path: Path, base_url: str) -> None:
    path.write_text(
        "default_model: fake\n"
        "models:\n"
        "  fake:\n"
        "    provider: generic\n"
        "    model: fake-model\n"
        f"    base_url: {base_url}\n"
        "    api_key: test-key\n"
        "    max_retries: 0\n"
        "loop:\n"
        "  harvest: false\n"
    )


def _supervisor_pid(rdir: Path) -> int | None:
    try:
        return int((rdir / "supervisor.pid").read_text())
    except (OSError, ValueError):
        return None


def _cleanup(rdir: Path, config: Path, text: str) -> None:
    """Stop whatever runs (with a readable config) and kill anything left."""
    config.write_text(text)
    sup_pid = _supervisor_pid(rdir)
    left = descendants(sup_pid) if sup_pid else []
    cli("down")
    for pid in [*left, *([sup_pid] if sup_pid else [])]:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


STALL_SECONDS = 6
# The model hangs, then answers with a write: a turn left running on the loop writes late.txt.
STALL_THEN_WRITE = [
    {"name": "stall-then-write", "fault": {"kind": "stall", "seconds": STALL_SECONDS},
     "tool_calls": [{"name": "write", "arguments": {"path": "late.txt", "content": "too late\n"}}]},
    {"name": "done", "text": "Wrote it."},
]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer(STALL_THEN_WRITE) as server:
        yield server


@pytest.fixture
def env(isolated_home: Path, tmp_path: Path, model: FakeModelServer,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    config = tmp_path / "config.yaml"
    write_config(config, model.url)
    text = config.read_text()
    monkeypatch.setenv("AI_CODING_CONFIG", str(config))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rdir = Path(os.environ["AI_CODING_RUNTIME_DIR"])
    yield {"workspace": workspace, "rdir": rdir, "config": config}
    _cleanup(rdir, config, text)


UP = {"loop": "SERVING", "tools": "SERVING", "memory": "SERVING", "mcp_gateway": "ON_DEMAND"}
"""What ``ai-coding up`` leaves: memory started for the turn to come (loop.memory is on), the gateway
waiting for its first call (no MCP server is configured)."""


def _health(stdout: str) -> dict[str, str]:
    return {name: s["health"] for name, s in json.loads(stdout)["services"].items()}


def _all_serving() -> bool:
    done = cli("status", "--json")
    return done.returncode == 0 and _health(done.stdout) == UP


def test_two_cold_ups_at_once_both_succeed_and_leave_one_supervisor_serving(env: dict[str, Any]) -> None:
    for _ in range(3):  # the race is lost only some of the time: try a few cold starts
        assert cli("down").returncode == 0
        first, second = cli_bg("up"), cli_bg("up")
        out1, err1 = first.communicate(timeout=120)
        out2, err2 = second.communicate(timeout=120)
        assert first.returncode == 0, out1 + err1
        assert second.returncode == 0, out2 + err2
        assert sorted(["services started" in out1, "services started" in out2]) == [False, True], out1 + out2
        assert _all_serving()
        sup_pid = _supervisor_pid(env["rdir"])
        assert sup_pid is not None and pid_alive(sup_pid)


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _assert_turn_stopped(stdout: str, workspace: Path, model: FakeModelServer) -> None:
    """The loop confirmed the interrupt, and after the model's stall would have ended nothing
    else reached the model and the scripted write never happened."""
    events = _events(stdout)
    assert events and events[-1]["turnFinished"]["status"] == "TURN_STATUS_INTERRUPTED", stdout[-2000:]
    assert wait_until(lambda: len(model.chat_requests) >= 1, 5)
    time.sleep(STALL_SECONDS + 3)  # a turn still running would now get the write and run it
    assert len(model.chat_requests) == 1
    assert not (workspace / "late.txt").exists()


def test_run_timeout_interrupts_the_turn_and_exits_4(env: dict[str, Any], model: FakeModelServer) -> None:
    assert cli("up").returncode == 0
    done = cli("run", "--json", "--auto-approve", "--timeout", "2", "-w", str(env["workspace"]), "write late.txt")
    assert done.returncode == 4, done.stderr[-2000:]
    assert "did not finish within --timeout (2 s)" in done.stderr
    _assert_turn_stopped(done.stdout, env["workspace"], model)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signalled_run_interrupts_its_turn_before_exiting(
        env: dict[str, Any], model: FakeModelServer, sig: int, code: int) -> None:
    assert cli("up").returncode == 0
    proc = cli_bg("run", "--json", "--auto-approve", "-w", str(env["workspace"]), "write late.txt")
    assert wait_until(lambda: len(model.chat_requests) >= 1, 60)  # the turn is in the model's stall
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    assert signal.Signals(sig).name in err
    _assert_turn_stopped(out, env["workspace"], model)


def test_down_status_and_logs_work_from_the_runtime_dir_while_the_config_is_broken(env: dict[str, Any]) -> None:
    assert cli("up").returncode == 0
    sup_pid = _supervisor_pid(env["rdir"])
    assert sup_pid is not None
    tree = [sup_pid, *descendants(sup_pid)]
    env["config"].write_text("models:\n  fake: [unclosed\n")
    where = f"{env['config']}:"

    status = cli("status", "--json")
    assert status.returncode == 0, status.stderr
    assert _health(status.stdout) == UP
    assert status.stderr.count("config cannot be read") == 1 and where in status.stderr

    logs = cli("logs", "supervisor", "-n", "5")
    assert logs.returncode == 0 and logs.stdout.strip(), logs.stderr
    assert "config cannot be read" in logs.stderr

    down = cli("down")
    assert down.returncode == 0 and "services stopped" in down.stdout, down.stderr
    assert wait_until(lambda: not any(pid_alive(p) for p in tree), 15)

    # What truly needs the config still fails with one clear line naming the file.
    idle = cli("status")
    assert idle.returncode == 2 and idle.stderr.strip().count("\n") == 0 and where in idle.stderr
    up = cli("up")
    assert up.returncode == 2 and "invalid YAML" in up.stderr and where in up.stderr
    assert "Traceback" not in up.stderr


class TestGlobalOptions:
    """``ai-coding -w DIR`` / ``--session S`` before a command apply to it, or are refused."""

    @pytest.fixture
    def model(self) -> Iterator[FakeModelServer]:
        with FakeModelServer([{"name": "first", "text": "First answer."},
                              {"name": "second", "match": "again", "text": "Second answer."}]) as server:
            yield server

    def test_global_workspace_and_session_reach_run(self, env: dict[str, Any], tmp_path: Path) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        first = cli("-w", str(env["workspace"]), "run", "--json", "hello", cwd=elsewhere)
        assert first.returncode == 0, first.stderr[-2000:]
        session_id = _events(first.stdout)[0]["sessionId"]
        listed = cli("sessions", "list", "--json", "-w", str(env["workspace"]))
        assert [row["id"] for row in json.loads(listed.stdout)] == [session_id], listed.stderr
        assert json.loads(cli("-w", str(elsewhere), "sessions", "list", "--json").stdout) == []

        second = cli("-w", str(env["workspace"]), "--session", session_id, "run", "--json", "again", cwd=elsewhere)
        assert second.returncode == 0, second.stderr[-2000:]
        assert {e["sessionId"] for e in _events(second.stdout)} == {session_id}

    def test_global_options_a_command_cannot_take_are_refused_in_one_line(self, env: dict[str, Any]) -> None:
        for args, flag in ((["-w", str(env["workspace"]), "status"], "-w/--workspace"),
                           (["--session", "abc", "down"], "--session")):
            done = cli(*args)
            assert done.returncode == 2 and done.stderr.strip().splitlines() == [
                f"ai-coding: {flag} does not apply to `ai-coding {args[-1]}`; leave it out"]
        both = cli("-w", str(env["workspace"]), "run", "-w", str(env["workspace"]), "hi")
        assert both.returncode == 2 and "given both before and after `run`" in both.stderr


def test_a_cold_run_whose_loop_cannot_start_names_the_service_its_exit_and_its_reason(env: dict[str, Any]) -> None:
    # The client reads this config fine; the loop refuses it at start (before SERVING). The run
    # starts the services early (control.begin) and still reports that start's failure itself.
    config: Path = env["config"]
    config.write_text(config.read_text() + "hooks: [not, a, mapping]\n")
    assert cli("down").returncode == 0
    done = cli("run", "-w", str(env["workspace"]), "hello")
    assert done.returncode == 3, done.stdout + done.stderr  # UNAVAILABLE
    assert "starting the services" in done.stderr
    assert "the loop service exited with code 2 while starting" in done.stderr and "hooks" in done.stderr, done.stderr
