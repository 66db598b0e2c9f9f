"""The supervisor killed with SIGKILL after two of its services were: the next client starts a
new one that takes over cleanly (real processes; found by this test's own runtime dir, never by name)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import is_service_process, pid_alive, read_pid, supervisor_running, wait_until
from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import SERVICES, cli, env

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"text": "still here", "repeat": "forever"}]) as server:
        yield server


def _status() -> dict[str, Any]:
    done = cli("status", "--json")
    assert done.returncode in (0, 3), done.stderr  # 3: some service is not SERVING
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _pids() -> dict[str, int | None]:
    return {name: svc["pid"] for name, svc in _status()["services"].items()}


def _processes_of(rdir: Path) -> list[int]:
    """Every process started with this test's runtime dir (the client, supervisor, services, children)."""
    mark = f"AI_CODING_RUNTIME_DIR={rdir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if mark in environ and pid_alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.mark.slow
def test_after_the_supervisor_is_killed_the_next_run_works_and_down_stops_everything(
        env: dict[str, Any]) -> None:
    rdir: Path = env["rdir"]
    assert cli("up").returncode == 0
    before = _pids()
    for name in ("loop", "tools"):
        os.kill(before[name] or 0, signal.SIGKILL)
    assert wait_until(lambda: all(
        s["health"] == "SERVING" and s["pid"] not in (None, before[n]) for n, s in _status()["services"].items()
        if n in ("loop", "tools")), 60), _status()
    supervisor = int((rdir / "supervisor.pid").read_text())
    os.kill(supervisor, signal.SIGKILL)

    done = cli("run", "-w", str(env["workspace"]), "hello again")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still here" in done.stdout

    report = _status()
    new_supervisor = read_pid(rdir)
    assert supervisor_running(rdir) and new_supervisor not in (None, supervisor) and pid_alive(new_supervisor or 0)
    for name in SERVICES:
        svc = report["services"][name]
        if name == "mcp_gateway":  # on demand, and no MCP server is configured: nothing started it
            assert svc["health"] == "ON_DEMAND" and svc["pid"] is None, report
            continue
        assert svc["health"] == "SERVING", report
        assert isinstance(svc["pid"], int) and pid_alive(svc["pid"]) and is_service_process(svc["pid"], name), report
    assert not [p for p in rdir.glob("*.on-demand") if p.name != "mcp_gateway.sock.on-demand"]

    down = cli("down")
    assert down.returncode == 0 and down.stdout.strip() == "services stopped", down.stdout + down.stderr
    assert wait_until(lambda: not _processes_of(rdir), 15), [
        Path(f"/proc/{p}/cmdline").read_bytes() for p in _processes_of(rdir)]
