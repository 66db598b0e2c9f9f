"""A session file that cannot be written degrades the turn (an event) instead of ending it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]


def test_an_unwritable_journal_degrades_with_an_event_and_the_turn_completes(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([{"match": "hello", "text": "Hi there."}])
    sid = stack.open().session_id
    journal = workspace / ".ai-coding" / "sessions" / f"{sid}.journal"
    assert not journal.exists()  # a session is written from its first turn on
    journal.mkdir(parents=True)  # writing or appending to it fails, even as root
    events = stack.start(sid, "hello").drain()
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "Hi there."
    degraded = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    assert [d.component for d in degraded].count("session_save") >= 2
