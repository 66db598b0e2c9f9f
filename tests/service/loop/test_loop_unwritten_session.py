"""A session is written from its first turn on: one opened and followed but never sent a message
leaves no file, even when the loop stops (it saves every open session); the first turn writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, finished, status_name


def _files(workspace: Path) -> list[str]:
    sessions = workspace / ".ai-coding" / "sessions"
    return sorted(p.name for p in sessions.iterdir()) if sessions.is_dir() else []


def test_a_session_nothing_was_said_in_leaves_no_file_and_the_first_turn_writes_it(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([{"text": "hello back"}])
    quiet = stack.open(interactive=True).session_id
    assert stack.attach(quiet, after_seq=0).drain() == []  # a REPL's follower: idle, so it ends
    assert stack.open(quiet).session_id == quiet  # re-opened by id while it is only in memory
    talked = stack.open(interactive=True).session_id
    assert status_name(finished(stack.start(talked, "hello").drain())) == "completed"
    stack.close()  # the loop stops and saves what it holds
    names = _files(workspace)
    assert not any(n.startswith(quiet) for n in names), names
    assert f"{talked}.json" in names and f"{talked}.journal" in names
