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


def test_after_a_turn_the_harvest_extracts_a_note_into_memory_without_delaying_the_turn(
        make_stack: Callable[..., LoopStack]) -> None:
    import time

    import grpc
    from ai_coding.v1 import memory_pb2, memory_pb2_grpc

    stack = make_stack([
        {"match": "we indent", "text": "Understood: tabs."},
        {"match": "user: we indent", "text": '[{"text": "The project indents Python code with tabs, not spaces.", '
                                            '"kind": "convention", "importance": 4}]'},
    ], memory="service", loop={"harvest": True})
    sid, events = stack.turn("we indent Python with tabs in this project")
    assert finished(events).text == "Understood: tabs."
    channel = grpc.insecure_channel(stack.memory.address.replace("unix://", "unix:"))
    notes_stub = memory_pb2_grpc.MemoryStub(channel)
    deadline = time.monotonic() + 30
    texts: list[str] = []
    while time.monotonic() < deadline and not texts:
        notes = notes_stub.ListNotes(memory_pb2.ListNotesRequest(workspace=str(stack.workspace)), timeout=10).notes
        texts = [n.text for n in notes]
        time.sleep(0.1)
    channel.close()
    assert texts == ["The project indents Python code with tabs, not spaces."]
    deadline = time.monotonic() + 10
    while stack.runtime.sessions[sid].session.harvest_cursor != 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stack.runtime.sessions[sid].session.harvest_cursor == 2


def test_memory_search_filters_reach_the_service_and_bad_arguments_come_back_naming_the_field(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "remember", "tool_calls": [{"name": "tool_search", "arguments": {"query": "memory write"}}]},
        {"match": "memory_write", "tool_calls": [
            {"name": "memory_write", "arguments": {"text": "Every release is tagged from the main branch only.",
                                                    "kind": "decision"}},
            {"name": "memory_write", "arguments": {"text": "The release script lives in tools/release.sh.",
                                                    "kind": "fact"}}]},
        {"match": "stored", "text": "Noted both."},
        # kind=decision must exclude the fact that shares the query's words.
        {"match": "which release", "tool_calls": [{"name": "memory_search", "arguments": {
            "query": "release", "kind": "decision"}}]},
        {"match": "tagged from the main branch", "tool_calls": [{"name": "memory_search", "arguments": {
            "query": "release", "k": "three"}}]},
        {"match": "`k` must be an integer", "text": "Releases are tagged from main."},
    ], memory="service")
    sid, events = stack.turn("remember two things about releases")
    assert status_name(finished(events)) == "completed", finished(events).reason
    _, events = stack.turn("which release rule was decided?", session_id=sid)
    assert status_name(finished(events)) == "completed", finished(events).reason
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert "tagged from the main branch" in results[0].output
    assert "tools/release.sh" not in results[0].output
    assert not results[1].ok and results[1].error.code == "invalid_arguments"
