"""A job never outlives the tools service: SIGKILL the service (a real process) while a `sleep` job
runs, sandboxed (bwrap) and on the host (sandbox none), and every process of the job is gone."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from tests.support.processes import ServiceProcess, write_user_config
from tests.support.tools_harness import ToolServiceClient


def _pids_running(marker: str, *, leading: bool = False) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if (cmdline.startswith(marker) if leading else marker in cmdline) and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_sigkill_of_the_tools_service_ends_its_running_jobs(
        short_dir: Path, isolated_home: Path, tmp_path: Path, mode: str) -> None:
    write_user_config(isolated_home, {"endpoints": {"tools": f"unix:{short_dir}/tools.sock"},
                                      "tools": {"sandbox": {"mode": mode}}})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    service = ServiceProcess("tools", short_dir / "tools.sock", tmp_path / "tools.log")
    service.start()
    marker = f"6{secrets.randbelow(10**6):06d}.5"  # a sleep length no other process uses
    client = ToolServiceClient(str(short_dir / "tools.sock"))
    try:
        client.connect()
        client.open("s1", str(workspace), mode=mode)
        _, result = client.call("s1", "job_start", json.dumps({"command": f"sleep {marker}"}))
        assert result.ok, result.error.message
        deadline = time.monotonic() + 20
        # The sleep itself, not bwrap's command line that names it: the sandbox is set up by then.
        while not _pids_running(f"sleep {marker}", leading=True) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _pids_running(f"sleep {marker}", leading=True), "the job never started"
        assert service.proc is not None
        os.kill(service.proc.pid, signal.SIGKILL)
        service.proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _pids_running(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _pids_running(marker)
        for pid in left:  # never leave them behind, even when the test fails
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"job processes outlived the service: {left}"
    finally:
        client.close()
        service.stop()


def test_the_empty_git_placeholder_a_killed_service_left_is_removed_by_the_next_one(
        short_dir: Path, isolated_home: Path, tmp_path: Path) -> None:
    write_user_config(isolated_home, {"endpoints": {"tools": f"unix:{short_dir}/tools.sock"}})
    workspace, repo_later = tmp_path / "ws", tmp_path / "became-a-repo"
    workspace.mkdir()
    repo_later.mkdir()
    service = ServiceProcess("tools", short_dir / "tools.sock", tmp_path / "tools.log")
    service.start()
    client = ToolServiceClient(str(short_dir / "tools.sock"))
    try:
        client.connect()
        for session, root in (("s1", workspace), ("s2", repo_later)):
            client.open(session, str(root))
            _, result = client.call(session, "job_start", json.dumps({"command": "sleep 600"}))
            assert result.ok, result.error.message
            assert (root / ".git").is_dir()  # the running job's sandbox mounts over it
        assert service.proc is not None
        os.kill(service.proc.pid, signal.SIGKILL)
        service.proc.wait(timeout=30)
        client.close()
        assert (workspace / ".git").is_dir()  # nothing of the killed service ran to remove it
        (repo_later / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # the user made a repository
        service.start()
        assert not (workspace / ".git").exists(), "the next tools service kept the killed one's placeholder"
        assert (repo_later / ".git" / "HEAD").is_file()  # not empty: the user's, so it stays
    finally:
        client.close()
        service.stop()
