"""Fifty sessions on one loop service at once: all complete, no event lands in the wrong stream."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]

SESSIONS = 50


def test_fifty_concurrent_sessions_all_complete_with_their_own_events(make_stack: Callable[..., LoopStack]) -> None:
    # The fake model answers requests in arrival order, so every session gets the same streamed reply;
    # mixing would show as a foreign session id, a gap in a stream's numbering or a wrong input.
    script = [{"text": "all done here", "chunk_chars": 1, "chunk_delay_ms": 2, "repeat": "forever"}]
    stack = make_stack(script)
    sids = [stack.open().session_id for _ in range(SESSIONS)]

    def run(index: int) -> tuple[str, list[loop_pb2.TurnEvent]]:
        return sids[index], stack.start(sids[index], f"tag-{index}").drain()

    with ThreadPoolExecutor(SESSIONS) as pool:
        outcomes = list(pool.map(run, range(SESSIONS)))
    for index, (sid, events) in enumerate(outcomes):
        assert all(e.session_id == sid for e in events)
        assert status_name(finished(events)) == "completed"
        started = [e.turn_started.input for e in events if e.WhichOneof("event") == "turn_started"]
        assert started == [f"tag-{index}"]
        seqs = [e.seq for e in events]
        assert seqs == list(range(1, len(seqs) + 1))
        text = "".join(e.text_delta.text for e in events if e.WhichOneof("event") == "text_delta")
        assert text == "all done here"
    assert stack.fake.errors == []
