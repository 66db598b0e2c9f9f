"""Bad input to the CLI: one clear line (what is wrong, what to do), a non-zero exit, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=120, stdin=subprocess.DEVNULL,
                          check=False)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_an_unknown_service_name_names_the_valid_ones(isolated_home: Path) -> None:
    for args in (("serve", "lopo"), ("logs", "lopo")):
        done = cli(*args)
        assert done.returncode == 2
        line = one_error_line(done)
        assert "unknown service 'lopo'" in line and "loop, tools, memory, mcp_gateway" in line


def test_a_runtime_dir_others_can_enter_is_refused_with_the_chmod_to_run(isolated_home: Path, short_dir: Path) -> None:
    rdir = short_dir / "run"
    rdir.mkdir(mode=0o755)
    os.chmod(rdir, 0o755)
    done = cli("status")
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"runtime dir {rdir} has mode 0755" in line and f"chmod 700 {rdir}" in line


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_a_runtime_dir_owned_by_someone_else_is_refused(isolated_home: Path, short_dir: Path) -> None:
    rdir = short_dir / "run"
    rdir.mkdir(mode=0o700)
    os.chown(rdir, 65534, 65534)
    done = cli("up")
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"runtime dir {rdir} is owned by uid 65534" in line and "AI_CODING_RUNTIME_DIR" in line


def test_an_invalid_config_file_is_named_with_its_line(isolated_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("models:\n  main:\n    model: gpt\n   base_url: [oops\n")
    done = cli("status", env={"AI_CODING_CONFIG": str(bad)})
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"invalid YAML in {bad}:" in line and "Fix that line" in line


def test_an_unreadable_config_file_is_named(isolated_home: Path, tmp_path: Path) -> None:
    unreadable = tmp_path / "config.yaml"
    unreadable.mkdir()  # a directory where the file should be: unreadable even for root
    done = cli("up", env={"AI_CODING_CONFIG": str(unreadable)})
    assert done.returncode == 2
    assert f"cannot read config file {unreadable}" in one_error_line(done)


def test_unreachable_services_name_the_service_and_how_to_start_it(isolated_home: Path, tmp_path: Path,
                                                                    short_dir: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("supervisor:\n  services: [tools, memory, mcp_gateway]\n")
    done = cli("run", "hello", env={"AI_CODING_CONFIG": str(config),
                                    "AI_CODING_LOOP_ENDPOINT": f"unix://{short_dir}/elsewhere.sock"})
    assert done.returncode == 3
    line = one_error_line(done)
    assert f"the loop service at unix://{short_dir}/elsewhere.sock is not answering" in line
    assert "ai-coding serve loop" in line


def test_status_with_nothing_running_says_so_and_exits_unavailable(isolated_home: Path) -> None:
    done = cli("status", "--json")
    assert done.returncode == 3
    report = json.loads(done.stdout)
    assert list(report) == ["services"]
    assert {s["health"] for s in report["services"].values()} == {"UNREACHABLE"}


def test_run_in_a_missing_workspace_says_which_directory(isolated_home: Path, tmp_path: Path) -> None:
    done = cli("run", "-w", str(tmp_path / "nope"), "hello")
    assert done.returncode == 2
    assert f"workspace {tmp_path / 'nope'} is not a directory" in one_error_line(done)


def test_a_negative_run_timeout_and_a_missing_sessions_workspace_are_usage_errors(
        isolated_home: Path, tmp_path: Path) -> None:
    done = cli("run", "--timeout", "-5", "-w", str(tmp_path), "hello")
    assert done.returncode == 2 and "--timeout -5 is negative" in one_error_line(done)
    for command in (("sessions", "list"), ("sessions", "show", "abc")):
        done = cli(*command, "-w", str(tmp_path / "nope"))
        assert done.returncode == 2, command
        assert f"workspace {tmp_path / 'nope'} is not a directory" in one_error_line(done)


def test_logs_before_anything_ran_says_how_to_start(isolated_home: Path) -> None:
    done = cli("logs", "loop")
    assert done.returncode == 2
    assert "ai-coding up" in one_error_line(done)


def test_a_runtime_dir_too_deep_for_unix_sockets_is_refused_before_anything_starts(
    isolated_home: Path, short_dir: Path
) -> None:
    deep = short_dir / ("d" * 100)
    done = cli("up", env={"AI_CODING_RUNTIME_DIR": str(deep)})
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"socket path {deep}/loop.sock is" in line and "at most 107" in line
    assert "AI_CODING_RUNTIME_DIR" in line


def test_a_run_with_no_model_configured_says_how_to_configure_one_and_leaves_no_session(isolated_home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    try:
        assert cli("up").returncode == 0
        done = cli("run", "-w", str(workspace), "hello")
        assert done.returncode == 2, done.stderr
        line = one_error_line(done)
        assert line.startswith("ai-coding run: no model configured") and "ai-coding setup" in line
        sessions = workspace / ".ai-coding" / "sessions"
        assert not (sessions.is_dir() and any(sessions.iterdir())), "a run that never reached the model left a session"
    finally:
        cli("down")
