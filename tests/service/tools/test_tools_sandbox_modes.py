"""When bwrap is missing or cannot start, and the explicit `mode: none` opt-out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.support.tools_harness import ThreadedToolService


def test_a_missing_bwrap_fails_bash_with_the_cause_and_both_fixes(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    svc = make_service({"sandbox": {"bwrap": "/nonexistent/bwrap"}})
    opened = svc.open("s1", str(workspace))
    assert any("not installed" in w for w in opened.warnings)
    _, result = svc.call("s1", "bash", json.dumps({"command": "echo should-not-run"}))
    assert not result.ok and result.error.code == "sandbox_unavailable"
    assert "apt-get install bubblewrap" in result.error.hint and "tools.sandbox.mode: none" in result.error.hint
    assert "should-not-run" not in result.output


def test_a_bwrap_that_cannot_create_namespaces_is_reported_with_its_message(
        make_service: Callable[..., ThreadedToolService], workspace: Path, tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    broken.chmod(0o755)
    svc = make_service({"sandbox": {"bwrap": str(broken)}})
    svc.open("s1", str(workspace))
    _, result = svc.call("s1", "bash", json.dumps({"command": "true"}))
    assert result.error.code == "sandbox_unavailable" and "uid map: Permission denied" in result.error.message


def test_mode_none_runs_on_the_host_and_warns_at_every_session_start(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    svc = make_service({"sandbox": {"mode": "none"}})
    for sid in ("s1", "s2"):
        opened = svc.open(sid, str(workspace))
        assert opened.sandbox.mode == "none" and any("sandbox is off" in w for w in opened.warnings)
    _, result = svc.call("s1", "bash", json.dumps({"command": "echo $HOME; ls /proc | grep -c '^[0-9]'"}))
    assert result.ok and json.loads(result.data_json)["sandbox"] == "none"
    assert int(result.output.split()[-1]) > 3  # the host's processes are visible: no pid namespace


def test_a_request_for_no_sandbox_is_ignored_when_the_config_says_bwrap(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    svc = make_service()
    opened = svc.open("s1", str(workspace), mode="none", network=True)
    assert opened.sandbox.mode == "bwrap" and not opened.sandbox.network
    _, result = svc.call("s1", "bash", json.dumps({"command": "ls /proc | grep -c '^[0-9]'"}))
    assert int(result.output.split()[0]) <= 5  # bwrap's pid namespace: only the sandbox's own processes


def test_an_idle_session_is_forgotten_but_one_with_a_running_job_is_kept(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    import time

    import grpc

    svc = make_service({"idle_session_seconds": 0.2})
    svc.open("idle", str(workspace))
    svc.open("busy", str(workspace))
    assert svc.call("busy", "job_start", json.dumps({"command": "sleep 600"}))[1].ok
    deadline = time.monotonic() + 20
    while "idle" in svc.runtime().sessions:
        assert time.monotonic() < deadline, "the idle session was never forgotten"
        time.sleep(0.1)
        svc.open("sweeper", str(workspace))  # opening a session sweeps idle ones
    try:
        svc.call("idle", "job_list", "{}")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND
    else:
        raise AssertionError("a call to a forgotten session must fail with NOT_FOUND")
    assert svc.call("busy", "job_list", "{}")[1].ok


def test_extra_roots_come_from_the_service_config_and_requests_cannot_add_more(
        make_service: Callable[..., ThreadedToolService], workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.txt").write_text("from the extra root\n")
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    svc = make_service({"extra_workspace_roots": [str(extra)]})
    opened = svc.open("s1", str(workspace), extra_roots=[str(extra), str(stranger)])
    assert list(opened.extra_roots) == [str(extra.resolve())]
    assert any("stranger" in w for w in opened.warnings)
    assert "from the extra root" in svc.call("s1", "read", json.dumps({"path": str(extra / "lib.txt")}))[1].output
    refused = svc.call("s1", "write", json.dumps({"path": str(stranger / "x.txt"), "content": "x"}))[1]
    assert refused.error.code == "path_outside_workspace"
    _, result = svc.call("s1", "bash", json.dumps(
        {"command": f"echo made > {extra}/made.txt; echo tried > {stranger}/tried.txt 2>&1; echo done"}))
    assert "done" in result.output and (extra / "made.txt").exists() and not (stranger / "tried.txt").exists()


def test_without_sandbox_options_the_service_config_decides_the_network(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    svc = make_service({"sandbox": {"network": True}})
    assert svc.open("s1", str(workspace)).sandbox.network
    assert not svc.open("s2", str(workspace), network=False).sandbox.network


def test_the_service_checks_bwrap_when_it_starts_not_at_the_first_session(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    from clients.cli.runtime import wait_until

    svc = make_service()
    probe = svc.runtime().probe
    assert wait_until(lambda: probe._ok, 30)  # no session opened yet: the service started the check itself
    checks: list[str] = []
    real_check = probe._check

    async def counted(found: str) -> None:
        checks.append(found)
        await real_check(found)

    probe._check = counted  # type: ignore[method-assign]
    opened = svc.open("s1", str(workspace))
    _, result = svc.call("s1", "bash", json.dumps({"command": "echo in-the-sandbox"}))
    assert result.ok and "in-the-sandbox" in result.output and opened.sandbox.mode == "bwrap"
    assert checks == []  # the session and its command used the check made at the start


def test_a_failed_check_at_the_start_is_told_to_the_first_session(
        make_service: Callable[..., ThreadedToolService], workspace: Path, tmp_path: Path) -> None:
    from clients.cli.runtime import wait_until

    broken = tmp_path / "bwrap"
    runs = tmp_path / "runs"
    broken.write_text(f"#!/bin/sh\necho run >> {runs}\necho 'bwrap: setting up uid map: Permission denied' >&2\n"
                      "exit 1\n")
    broken.chmod(0o755)
    svc = make_service({"sandbox": {"bwrap": str(broken)}})
    assert wait_until(runs.exists, 30)  # the start's check ran, and failed
    opened = svc.open("s1", str(workspace))
    assert any("uid map: Permission denied" in w for w in opened.warnings), opened.warnings
    assert not svc.runtime().probe._ok
