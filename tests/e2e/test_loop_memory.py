"""Memory through the loop: memory_write / memory_search against the real memory service, and
a memory service that is down degrades the turn instead of failing it."""

from __future__ import annotations

from collections.abc import Callable

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]


def test_a_note_written_in_one_turn_is_found_by_memory_search_in_the_next(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "remember", "tool_calls": [{"name": "tool_search", "arguments": {"query": "memory write"}}]},
        {"match": "memory_write", "tool_calls": [{"name": "memory_write", "arguments": {
            "text": "The billing module rounds invoice totals half-up to two decimals.", "kind": "fact"}}]},
        {"match": "stored", "text": "Noted."},
        {"match": "how do invoices round", "tool_calls": [{"name": "memory_search", "arguments": {
            "query": "invoice rounding"}}]},
        {"match": "half-up", "text": "Half-up to two decimals."},
    ], memory="service")
    sid, events = stack.turn("remember how invoices round")
    assert status_name(finished(events)) == "completed", finished(events).reason
    _, events = stack.turn("how do invoices round?", session_id=sid)
    assert finished(events).text == "Half-up to two decimals."


def test_a_memory_service_that_is_down_degrades_and_the_turn_completes(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"match": "hello", "text": "Hi."}], memory="down")
    _, events = stack.turn("hello")
    assert status_name(finished(events)) == "completed"
    degraded = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    assert "memory_constraints" in [d.component for d in degraded]
