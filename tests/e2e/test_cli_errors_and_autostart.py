"""Client commands start the services as ``run`` does, and a failure names its cause: the file and
what to do, with a non-zero exit (real CLI, supervisor and services; the fake model)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"text": "ok", "repeat": "forever"}]) as server:
        yield server


def test_memory_list_with_the_services_down_starts_them_and_lists(env: dict[str, Any]) -> None:
    done = cli("memory", "list", "-w", str(env["workspace"]), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"notes": []}'
    assert done.stderr.strip() == "starting the services (ai-coding up) ..."
    assert cli("status").returncode == 0


def test_a_truncated_memory_db_is_named_with_what_to_do_not_called_unreachable(env: dict[str, Any]) -> None:
    state = env["workspace"] / ".ai-coding"
    state.mkdir()
    db = state / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    db.write_bytes(db.read_bytes()[:3000])  # cut mid-page, as a full disk or a bad copy leaves it
    done = cli("memory", "list", "-w", str(env["workspace"]))
    assert done.returncode == 3
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"ai-coding memory list: cannot open the memory store {db}: "), done.stderr
    assert "move a corrupt memory.db aside to start fresh" in line and "not reachable" not in line


def test_a_session_whose_snapshot_and_journal_are_both_garbage_is_an_error_naming_them(
        env: dict[str, Any]) -> None:
    sessions = env["workspace"] / ".ai-coding" / "sessions"
    sessions.mkdir(parents=True)
    sid = "0123456789abcdef0123"
    (sessions / f"{sid}.json").write_bytes(b"\x00\x17{garbage")
    (sessions / f"{sid}.journal").write_bytes(b"not a journal\nat all\n")
    done = cli("sessions", "show", sid, "-w", str(env["workspace"]))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"ai-coding sessions show: session {sid} cannot be read: its snapshot and its journal are both corrupt and "
        f"no message could be recovered ({sid}.json, {sid}.journal in {sessions}) Restore those files from a backup, "
        "or start a new session; `ai-coding sessions list` shows the others.")
    assert (sessions / f"{sid}.json").read_bytes() == b"\x00\x17{garbage"  # nothing destroyed


def _in_mount_namespace(*mount: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a mount namespace of its own (bwrap, as the sandbox uses it): the supervisor and
    the services it starts share that view of the filesystem."""
    return subprocess.run(["bwrap", "--dev-bind", "/", "/", *mount, "--", sys.executable, "-m", "clients.cli.entry",
                           *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          check=False, cwd=cwd)


def test_a_read_only_state_dir_is_one_line_naming_it_and_what_to_do(env: dict[str, Any]) -> None:
    workspace: Path = env["workspace"]
    state = workspace / ".ai-coding"
    state.mkdir()
    done = _in_mount_namespace("--ro-bind", str(state), str(state), args=["run", "-w", str(workspace), "hi"],
                               cwd=workspace)
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line == (f"ai-coding run: cannot write the session file {state / 'sessions'}: Read-only file system. "
                    f"Make {state / 'sessions'} writable (or run in a workspace you can write to)."), done.stderr
    assert "Errno" not in done.stderr and "Unexpected" not in done.stderr


def test_a_full_disk_during_the_turn_says_the_session_was_not_saved_and_exits_1(
        env: dict[str, Any], model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    state = workspace / ".ai-coding"
    state.mkdir()
    model.load_script([{"text": "x" * 300_000}])  # the step's journal record does not fit in 128 KiB
    done = _in_mount_namespace("--size", str(128 * 1024), "--tmpfs", str(state),
                               args=["run", "--json", "-w", str(workspace), "write a long answer"], cwd=workspace)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"ai-coding run: the session was not saved: cannot write the session file {state}/"), line
    assert line.endswith(f": No space left on device. Free disk space on the filesystem of {state / 'sessions'}, "
                         "then continue the session with --session."), line


def test_sessions_list_names_each_unreadable_session_with_its_file_and_exits_1(env: dict[str, Any]) -> None:
    workspace: Path = env["workspace"]
    assert cli("run", "-w", str(workspace), "a good session").returncode == 0
    sessions = workspace / ".ai-coding" / "sessions"
    garbage, odd = "0123456789abcdef0123", "0123456789abcdef0456"
    (sessions / f"{garbage}.json").write_bytes(b"\x00\x17{garbage")
    (sessions / f"{garbage}.journal").write_bytes(b"not a journal\nat all\n")
    (sessions / f"{odd}.json").mkdir()  # cannot be read as a file, even by root
    done = cli("sessions", "list", "-w", str(workspace))
    as_json = cli("sessions", "list", "-w", str(workspace), "--json")
    assert done.returncode == 1 and as_json.returncode == 1, done.stdout + done.stderr
    assert "a good session" in done.stdout and garbage not in done.stdout and odd not in done.stdout
    assert [row["preview"] for row in json.loads(as_json.stdout)] == ["a good session"]
    assert sorted(done.stderr.strip().splitlines()) == [
        f"ai-coding sessions list: session {garbage} cannot be read ({sessions / garbage}.json): its snapshot and "
        "its journal are both corrupt and no message could be recovered. Restore those files from a backup, or "
        "start a new session; `ai-coding sessions list` shows the others.",
        f"ai-coding sessions list: session {odd} cannot be read ({sessions / odd}.json): is a directory. "
        f"Restore it from a backup, or move it out of {sessions}.",
    ], done.stderr
    assert as_json.stderr == done.stderr
    assert (sessions / f"{garbage}.json").read_bytes() == b"\x00\x17{garbage"  # listing destroys nothing
