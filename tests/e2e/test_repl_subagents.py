"""Subagents in the real REPL (a pseudo-terminal) against the services `ai-coding up` starts: a child's
approvals answered in the REPL and from `ai-coding attach`, nested lines, /tasks, and a loop killed with
a background child running."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pexpect")

from tests.e2e.test_repl_session import Term, _loop_status, _session_id, plain
from tests.support.cli_stack import Stack, cli_stack

PARENT = "delegate this"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-sub-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Iterator[Path]:
    yield Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


def load(stack: Stack, *steps: dict[str, Any]) -> None:
    stack.model.load_script({"order": "first_match", "steps": list(steps)})


def test_a_childs_approvals_are_answered_in_the_repl_and_from_an_attached_terminal(
        stack: Stack, workspace: Path) -> None:
    task = "write the two notes"
    load(stack,
         {"match_first_user": PARENT, "tool_calls": [{"name": "subAgent", "arguments": {"task": task, "name": "notes"}}]},
         {"match_first_user": PARENT, "match_anywhere": '"run_id"', "text": "The child reported back."},
         {"match_first_user": task, "tool_calls": [{"name": "write", "arguments": {"path": "yes.txt", "content": "y\n"}}]},
         {"match_first_user": task, "match": "yes.txt",
          "tool_calls": [{"name": "write", "arguments": {"path": "no.txt", "content": "n\n"}}]},
         {"match_first_user": task, "match": "denied_by_user", "text": "Wrote yes.txt; no.txt was refused."})
    term = Term(stack, workspace)
    try:
        term.line(f"{PARENT}: notes")
        term.expect("↳ subagent notes")
        term.expect(f"? approve write for subagent notes (task: {task})")
        term.expect("approve? [y/a/n/s]")
        term.key("y")
        term.expect("→ allowed once")
        term.expect("? approve write for subagent notes")
        other = Term(stack, workspace, "attach", _session_id(term.seen))
        try:
            other.expect("approve? [y/a/n/s]")
            other.key("n")
            for t in (other, term):
                t.expect("→ denied")
                t.expect("↳ subagent notes completed")
                t.expect("The child reported back.")
                t.expect("● completed")
        finally:
            other.close()
        assert (workspace / "yes.txt").read_text() == "y\n" and not (workspace / "no.txt").exists()
        term.line("/tasks")
        out = plain(term.expect("tok"))
        assert "notes" in out and "completed" in out
    finally:
        term.close()


def test_a_loop_killed_with_a_background_child_running_says_after_restart_that_the_run_was_lost(
        stack: Stack, workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("a\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-q", "-m", "base")
    task = "a long background survey"
    load(stack,
         {"match_first_user": PARENT, "tool_calls": [{"name": "subAgent", "arguments": {
             "task": task, "name": "survey", "background": True}}]},
         {"match_first_user": PARENT, "match_anywhere": '"run_id"', "text": "Survey started."},
         {"match_first_user": task, "text": "s" * 400, "chunk_delay_ms": 200, "chunk_chars": 1},
         {"text": "after the restart", "repeat": "forever"})
    term = Term(stack, workspace)
    try:
        term.line(f"{PARENT}: survey")
        term.expect("Survey started.")
        term.expect("● completed")
        term.line("/tasks")
        term.expect("running")
        deadline = time.monotonic() + 20
        while len(worktrees(workspace)) < 2 and time.monotonic() < deadline:  # made by the child's own task
            time.sleep(0.1)
        assert len(worktrees(workspace)) == 2, plain(term.seen)[-2000:]  # the child works in its own worktree
        os.kill(_loop_status(stack)["pid"], signal.SIGKILL)
        term.line("hello again")  # the REPL re-sends until the restarted loop takes it
        term.expect("after the restart")
        term.expect("● completed")
        term.line("/tasks")
        out = plain(term.expect("not resumed"))
        assert "survey" in out and "lost: the loop restarted while it ran" in out
    finally:
        term.close()
    # The run is recorded as lost (no longer as running), and its worktree and branch were removed.
    running = workspace / ".ai-coding" / "transcripts" / "subagents" / "running"
    assert not list(running.glob("*.json")) and len(list((running / "lost").glob("*.json"))) == 1
    assert worktrees(workspace) == [str(workspace)]
    assert not [p for p in (workspace / ".ai-coding" / "worktrees").iterdir() if p.is_dir()]
    assert "ai-coding/sub/" not in git(workspace, "branch", "--list")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def worktrees(repo: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_a_background_childs_end_is_shown_after_the_user_moved_to_another_session(
        stack: Stack, workspace: Path) -> None:
    task = "a short background check"
    load(stack,
         {"match_first_user": PARENT, "tool_calls": [{"name": "subAgent", "arguments": {
             "task": task, "name": "checker", "background": True}}]},
         {"match_first_user": PARENT, "match_anywhere": '"run_id"', "text": "Check started."},
         {"match_first_user": task, "text": "All checks green.", "delay_ms": 8000})
    term = Term(stack, workspace)
    try:
        term.line(f"{PARENT}: check")
        term.expect("Check started.")
        term.expect("● completed")
        first = _session_id(term.seen)
        term.line("/clear")
        term.expect("/help for commands")
        out = plain(term.expect(f"from session {first[:12]}"))
        assert "⟲ background subagent checker" in out and "completed · All checks green." in out
    finally:
        term.close()
