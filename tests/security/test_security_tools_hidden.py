"""Only the system directories, the workspace and configured read-only paths are visible to bash:
another project's workspace state outside home and /tmp (here a top-level directory of its own)
cannot be read, and a command that trips over a hidden directory is told how to show it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.tools.sandbox import bwrap_argv
from tests.support.tools_harness import ThreadedToolService

SESSION_TEXT = "another-project-session-transcript"


@pytest.fixture
def other_project() -> Iterator[Path]:
    """A project with a saved session in a top-level directory of its own (outside home and /tmp)."""
    top = Path(f"/aic-other-{uuid.uuid4().hex[:8]}")
    try:
        top.mkdir()
    except OSError:
        pytest.skip("cannot create a top-level directory here (needs root, as in CI)")
    try:
        sessions = top / "project" / ".ai-coding" / "sessions"
        sessions.mkdir(parents=True)
        (sessions / "s1.json").write_text(SESSION_TEXT)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def bash(svc: ThreadedToolService, command: str) -> str:
    return svc.call("s1", "bash", json.dumps({"command": command, "timeout_seconds": 30}))[1].output


def test_another_projects_sessions_outside_home_and_tmp_are_not_readable(
        service: ThreadedToolService, other_project: Path) -> None:
    session = other_project / "project" / ".ai-coding" / "sessions" / "s1.json"
    assert session.read_text() == SESSION_TEXT  # the host can: the control
    listing = bash(service, f"ls -A {other_project} 2>&1; find {other_project} 2>&1 | head; echo finished")
    assert "finished" in listing and "project" not in listing.replace(str(other_project), ""), listing
    out = bash(service, f"cat {session}")
    assert SESSION_TEXT not in out and "No such file or directory" in out
    assert f"{other_project} is hidden inside the sandbox" in out and "read_only_paths" in out


def test_a_configured_read_only_path_is_visible_but_not_writable(
        make_service: Callable[..., ThreadedToolService], workspace: Path, other_project: Path) -> None:
    svc = make_service({"sandbox": {"read_only_paths": [str(other_project)]}})
    svc.open("s1", str(workspace))
    session = other_project / "project" / ".ai-coding" / "sessions" / "s1.json"
    out = bash(svc, f"cat {session}; echo; touch {other_project}/new 2>&1; echo finished")
    assert SESSION_TEXT in out and "Read-only file system" in out
    assert not (other_project / "new").exists()


def test_a_read_only_path_containing_home_is_refused_at_session_open(
        make_service: Callable[..., ThreadedToolService], workspace: Path, isolated_home: Path) -> None:
    home = isolated_home
    svc = make_service({"sandbox": {"read_only_paths": [str(home.parent)]}})
    opened = svc.open("s1", str(workspace))
    assert any("read_only_paths" in w and "home directory" in w for w in opened.warnings), opened.warnings
    marker = home / f".aic-hidden-{os.getpid()}"
    marker.write_text("home-marker")
    try:
        assert bash(svc, f"cat {marker} 2>/dev/null; echo finished").split() == ["finished"]
    finally:
        marker.unlink()


def test_a_top_level_directory_that_comes_or_goes_after_the_sandbox_was_planned_neither_shows_nor_fails(
        tmp_path: Path, other_project: Path) -> None:
    """The sandbox's root holds only the visible system directories: it is not made by listing the
    hidden ones, so the host changing its top level between the plan and the mount changes nothing."""
    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap is installed by scripts/setup_tests.sh"
    root = tmp_path / "ws"
    root.mkdir()
    late = Path(f"/aic-late-{uuid.uuid4().hex[:8]}")
    probe = f"ls -d {late} 2>&1; ls -d {other_project} 2>&1; touch /new-top 2>&1; echo finished"
    argv = bwrap_argv(bwrap, [root], root, False, [], probe)
    assert str(other_project) not in " ".join(argv[:argv.index("--")])  # no mount names it
    shutil.rmtree(other_project)  # gone before the mount: the command still runs
    late.mkdir()  # made after the plan: still not visible
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    finally:
        late.rmdir()
    assert done.returncode == 0 and "finished" in done.stdout, (done.stdout, done.stderr)
    assert f"ls: cannot access '{late}'" in done.stdout and f"ls: cannot access '{other_project}'" in done.stdout
    assert "Read-only file system" in done.stdout  # nothing new at the top level either
    assert not Path("/new-top").exists()
