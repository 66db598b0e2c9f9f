"""With the sandbox off, what a command detaches dies with it: `setsid sleep &`, a double fork that
leaves the group, and `nohup` (each a real process, found in /proc by a sleep length no other process
uses), when the job is stopped, when its command exits, when a bash call returns, when the session
closes, and when the tools service itself is SIGKILLed (the guardian ends them)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ai_coding.v1 import tools_pb2

from tests.faults.test_jobs_die_with_service import _pids_running
from tests.support.processes import ServiceProcess, write_user_config
from tests.support.tools_harness import ToolServiceClient


def _detaching(stem: str) -> str:
    """A command whose three sleeps each escape the job's process group a different way."""
    return (f"setsid sleep {stem}1 >/dev/null 2>&1 < /dev/null & "
            f"( setsid sh -c 'sleep {stem}2 & exit 0' >/dev/null 2>&1 & ) ; "
            f"nohup setsid sleep {stem}3 >/dev/null 2>&1 & "
            "echo detached")


def _wait_for(stem: str, count: int, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(found := _pids_running(f"sleep {stem}", leading=True)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _wait_gone(stem: str, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := _pids_running(f"sleep {stem}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # never leave them behind, even when the test fails
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


@pytest.fixture
def host_tools(short_dir: Path, isolated_home: Path, tmp_path: Path) -> Iterator[tuple[ServiceProcess,
                                                                                       ToolServiceClient]]:
    write_user_config(isolated_home, {"endpoints": {"tools": f"unix:{short_dir}/tools.sock"},
                                      "tools": {"sandbox": {"mode": "none"}}})
    (tmp_path / "ws").mkdir()
    service = ServiceProcess("tools", short_dir / "tools.sock", tmp_path / "tools.log")
    service.start()
    client = ToolServiceClient(str(short_dir / "tools.sock"))
    try:
        client.connect()
        client.open("s1", str(tmp_path / "ws"), mode="none")
        yield service, client
    finally:
        client.close()
        service.stop()


def _stem() -> str:
    return f"7{secrets.randbelow(10**5):05d}.4"  # a sleep length no other process uses, then 1, 2, 3


def _start_job(client: ToolServiceClient, command: str) -> str:
    _, result = client.call("s1", "job_start", json.dumps({"command": command}))
    assert result.ok, result.error.message
    return str(json.loads(result.data_json)["job_id"])


def test_stopping_a_job_ends_the_processes_it_detached(host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    _, client = host_tools
    stem = _stem()
    job = _start_job(client, _detaching(stem) + "; sleep 900")
    assert len(_wait_for(stem, 3)) == 3, "the detached sleeps never started"
    _, result = client.call("s1", "job_stop", json.dumps({"job_id": job}))
    assert result.ok, result.error.message
    assert not _wait_gone(stem), "processes a stopped job detached outlived it"


def test_a_job_whose_command_exits_takes_its_detached_processes_with_it(
        host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    _, client = host_tools
    stem = _stem()
    _start_job(client, _detaching(stem))
    assert not _wait_gone(stem, timeout=15), "a finished job left detached processes running"


def test_a_bash_call_that_detaches_returns_and_leaves_nothing_running(
        host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    _, client = host_tools
    stem = _stem()
    _, result = client.call("s1", "bash", json.dumps({"command": _detaching(stem)}))
    assert result.ok and "detached" in result.output, result.error.message
    assert not _wait_gone(stem, timeout=5), "a bash call left detached processes running"


def test_closing_the_session_ends_what_its_jobs_detached(
        host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    _, client = host_tools
    stem = _stem()
    _start_job(client, _detaching(stem) + "; sleep 900")
    assert len(_wait_for(stem, 3)) == 3
    client.stub.CloseSession(tools_pb2.CloseSessionRequest(session_id="s1"), timeout=30)
    assert not _wait_gone(stem), "closing the session left detached processes running"


def test_a_sigkill_of_the_service_ends_what_its_jobs_detached(
        host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    service, client = host_tools
    stem = _stem()
    _start_job(client, _detaching(stem) + "; sleep 900")
    assert len(_wait_for(stem, 3)) == 3
    assert service.proc is not None
    os.kill(service.proc.pid, signal.SIGKILL)
    service.proc.wait(timeout=30)
    assert not _wait_gone(stem), "detached job processes outlived a SIGKILLed tools service"


def test_a_service_that_starts_ends_what_a_killed_service_and_its_guardian_left(
        host_tools: tuple[ServiceProcess, ToolServiceClient]) -> None:
    service, client = host_tools
    stem = _stem()
    _start_job(client, _detaching(stem) + "; sleep 900")
    assert len(_wait_for(stem, 3)) == 3
    assert service.proc is not None
    guardians = [pid for pid in _pids_running("services/tools/guardian.py") if _parent(pid) == service.proc.pid]
    assert len(guardians) == 1, guardians
    os.kill(guardians[0], signal.SIGKILL)
    os.kill(service.proc.pid, signal.SIGKILL)
    service.proc.wait(timeout=30)
    time.sleep(0.5)
    assert len(_pids_running(f"sleep {stem}", leading=True)) == 3, "nothing was left to sweep"
    service.start()
    assert not _wait_gone(stem, timeout=30), "a new tools service left a dead one's detached processes running"


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return 0


def test_a_start_sweeps_only_its_own_scopes_leftovers(tmp_path: Path) -> None:
    """Another user's or another runtime dir's leftovers are theirs: a service as root sees every environ."""
    from services.tools import reaper

    reaper.set_scope(tmp_path / "run")
    stem = _stem()
    ours = subprocess.Popen(["sleep", f"{stem}1"], env={reaper.MARKER: f"{reaper.scope()}:999999999.1/1"},
                            start_new_session=True)
    theirs = subprocess.Popen(["sleep", f"{stem}2"], env={reaper.MARKER: "12345.0123456789:999999999.1/1"},
                              start_new_session=True)
    try:
        assert len(_wait_for(stem, 2)) == 2
        assert reaper.sweep_dead_owners() >= 1
        assert ours.wait(timeout=10) == -signal.SIGKILL
        assert theirs.poll() is None, "a service swept processes outside its scope"
    finally:
        reaper._scope = None
        for proc in (ours, theirs):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=10)
