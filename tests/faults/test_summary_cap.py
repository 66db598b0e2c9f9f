"""A summary endpoint that ignores max_tokens and answers 300 KB: the checkpoint is capped when it is
written, the turn says so, and every later turn of the session still fits the window (real loop and
tools services; the fake model enforces its 32k window)."""

from __future__ import annotations

from collections.abc import Callable

from services.fake_model import FakeModelServer
from services.loop.compaction.summary import SUMMARY_MARKER
from services.loop.core.sessions import SessionStore
from tests.e2e.test_loop_compaction import BIG_OUTPUT, INSTRUCTION, bash_step, long_stack
from tests.service.loop.harness import LoopStack, fake, finished, status_name, workspace

__all__ = ["fake", "long_stack", "workspace"]


def test_a_300_kb_summary_is_capped_at_write_and_later_turns_still_fit(
        long_stack: Callable[..., LoopStack], fake: FakeModelServer) -> None:
    huge = "Goal: refactor. " + "detail " * 43_000  # ~300 KB
    stack = long_stack([
        {"match": SUMMARY_MARKER, "repeat": "forever", "text": huge},
        bash_step(BIG_OUTPUT, repeat=6),
        {"text": "Refactor finished."},
        {"match": "and now", "text": "Still here.", "repeat": "forever"},
    ], keep_recent_tool_tokens=10**9)  # tool output stays verbatim: the ceiling brings a summary
    sid, events = stack.turn(INSTRUCTION)
    assert status_name(finished(events)) == "completed", finished(events)
    reasons = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"]
    assert any("came back" in r and "only its start is stored" in r for r in reasons), reasons
    session = SessionStore(stack.workspace).load(sid)[0]
    summary = (session.slots.get("compaction", {}).get("checkpoint") or {}).get("summary", "")
    assert 0 < len(summary) < 40_000, len(summary)
    for n in range(3):
        later = stack.start(sid, f"and now {n}").drain()
        assert status_name(finished(later)) == "completed", finished(later)
    assert all(r.status == 200 for r in fake.chat_requests), [r.status for r in fake.chat_requests]
