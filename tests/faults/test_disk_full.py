"""A full disk (a real tmpfs filled to ENOSPC) under compaction's transcripts: the turn completes, and
the Degraded event names the disk, the path and what to free, instead of `internal_error: OSError`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from services.loop.subagents.feature import SubagentsFeature
from tests.e2e.test_loop_compaction import BIG_OUTPUT, INSTRUCTION, bash_step, long_stack, summary_step
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "long_stack", "make_stack", "workspace"]


def _mount_tmpfs(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")


def _fill(where: Path) -> None:
    with open(where / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"x" * 4096)
        except OSError:
            pass
    with pytest.raises(OSError):
        (where / "probe").write_bytes(b"y" * 8192)


@pytest.fixture
def full_disk_at() -> Iterator[Callable[[Path], None]]:
    mounted: list[Path] = []

    def mount(where: Path) -> None:
        _mount_tmpfs(where)
        mounted.append(where)
        _fill(where)

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_compaction_on_a_full_disk_completes_the_turn_and_names_the_disk(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer, workspace: Path,
        full_disk_at: Callable[[Path], None]) -> None:
    transcripts = workspace / ".ai-coding" / "transcripts"
    full_disk_at(transcripts)
    os.chmod(workspace / ".ai-coding", 0o700)
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=6), {"text": "Refactor finished."}])
    _, events = stack.turn(INSTRUCTION)
    end = finished(events)
    assert status_name(end) == "completed", end
    ended = [e for e in events if e.WhichOneof("event") == "compaction_ended"]
    assert ended, "the script is meant to compact"
    degraded = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"
                and e.degraded.component == "compaction"]
    assert degraded, [e.WhichOneof("event") for e in events]
    assert any("is full (ENOSPC)" in r and str(transcripts) in r and "free space there" in r for r in degraded), \
        degraded


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def _repo(workspace: Path) -> None:
    _git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("a1\n")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "base")


def _subagent_turn(make_stack: Callable[..., LoopStack]) -> tuple[LoopStack, str, list[Any]]:
    task = "look at a.txt"
    stack = make_stack({"order": "first_match", "steps": [
        {"match_first_user": "delegate", "tool_calls": [{"name": "subAgent", "arguments": {"task": task,
                                                                                             "name": "looker"}}]},
        {"match_first_user": "delegate", "match_anywhere": '"run_id"', "text": "parent done"},
        {"match_first_user": task, "text": "child looked"},
    ]}, with_tools=True)
    sid, events = stack.turn("delegate: look at a.txt")
    return stack, sid, events


@pytest.mark.parametrize("fault", ["enospc", "index_lock"])
def test_a_subagent_whose_worktree_cannot_be_made_names_the_cause_and_frees_its_slot(
        make_stack: Callable[..., LoopStack], workspace: Path, full_disk_at: Callable[[Path], None],
        fault: str) -> None:
    _repo(workspace)
    if fault == "enospc":
        (workspace / ".ai-coding").mkdir(mode=0o700, exist_ok=True)
        full_disk_at(workspace / ".ai-coding" / "worktrees")
    else:  # another git holds the index: `git stash create` of the changed tree fails on index.lock
        (workspace / "a.txt").write_text("a2\n")
        (workspace / ".git" / "index.lock").write_text("")
    stack, sid, events = _subagent_turn(make_stack)
    assert status_name(finished(events)) == "completed"
    degraded = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"
                and e.degraded.component == "subagent_worktree"]
    expected = "is full (ENOSPC)" if fault == "enospc" else "index.lock"
    assert any(expected in r for r in degraded), degraded
    packets = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"
               and e.tool_finished.result.tool == "subAgent" and not e.HasField("scope")]
    assert packets and "cancelled: the turn ended" not in packets[0].output
    assert '"status": "completed"' in packets[0].output and '"isolation": "shared"' in packets[0].output
    feature = stack.runtime.sessions[sid].feature(SubagentsFeature)
    assert feature is not None
    manager = feature.manager
    assert all(run.finished for run in manager.table.runs.values()), [r.status for r in manager.table.runs.values()]
