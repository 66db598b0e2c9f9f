"""MCP servers through the loop and the real gateway. Our library server: a changed tool list
changes the catalog in the system message once (one declared cache break, said once) and the new
tool is callable; its instructions are in the system message from the first step; the model lists
and reads its resources. server-everything: a task-only tool streams its stages, an interrupt
cancels the task on the server."""

from __future__ import annotations

import itertools
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_loop_mcp_catalog_budget import wait_all_connected
from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIBRARY = Path(__file__).resolve().parents[1] / "mcp_servers" / "library_server.py"


def test_a_tool_list_change_is_one_declared_cache_break_and_the_new_tool_is_called(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "library", "tool": "shelve",
                                                            "input": {"title": "dune"}}}]},
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "library", "tool": "find_book",
                                                            "input": {"title": "emma"}}}]},
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "library", "tool": "read_dune",
                                                            "input": {}}}]},
        {"text": "Read it."},
    ], mcp_servers=[{"name": "library", "type": "local", "command": [sys.executable, str(LIBRARY)]}])
    wait_all_connected(stack, ["library"])
    _, events = stack.turn("shelve dune and read it")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert results[-1].ok and results[-1].output.startswith("reading dune: Dune"), results[-1]
    systems = [str(r.body["messages"][0]["content"]) for r in stack.fake.chat_requests]
    assert "- library: The library server knows three books" in systems[0]  # its instructions
    assert "read_dune" not in systems[0] and "read_dune" in systems[-1]
    changes = sum(1 for a, b in itertools.pairwise(systems) if a != b)
    assert changes == 1, "the system message changed more than once"
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"
               and "MCP tool set changed" in e.notice.text]
    assert len(notices) == 1, notices


def test_the_model_lists_a_servers_resources_and_templates_and_reads_one(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"tool_calls": [{"name": "tool_search", "arguments": {"query": "mcp resources"}}]},
        {"tool_calls": [{"name": "mcp_resources", "arguments": {"server": "library"}}]},
        {"tool_calls": [{"name": "mcp_resources", "arguments": {"server": "library",
                                                                 "uri": "library://books/ubik"}}]},
        {"text": "Ubik it is."},
    ], mcp_servers=[{"name": "library", "type": "local", "command": [sys.executable, str(LIBRARY)]}])
    wait_all_connected(stack, ["library"])
    _, events = stack.turn("what does the library have?")
    assert status_name(finished(events)) == "completed"
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    listed, read = results[1], results[2]
    assert listed.ok and read.ok, (listed, read)
    assert "library://guide  guide (text/plain): Lending rules" in listed.output
    assert "library://books/{title}  book: One book's card" in listed.output.split("templates", 1)[1]
    assert read.output == "Ubik, by Philip K. Dick: reality decays in a spray can."
    tools = [[t["function"]["name"] for t in r.body["tools"]] for r in stack.fake.chat_requests]
    assert "mcp_resources" not in tools[0] and "mcp_resources" in tools[1]  # deferred, loaded by the search


def test_a_task_only_tool_streams_its_stages_and_an_interrupt_cancels_the_task_on_the_server(
        make_stack: Callable[..., LoopStack], caplog: pytest.LogCaptureFixture) -> None:
    from ai_coding.v1 import loop_pb2

    from tests.e2e.test_loop_mcp_catalog_budget import EVERYTHING, NODE

    stack = make_stack([
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "everything", "tool": "simulate-research-query",
                                                            "input": {"topic": "tides"}}}]},
        {"text": "Stopped."},
    ], mcp_servers=[{"name": "everything", "type": "local", "command": [str(NODE), str(EVERYTHING), "stdio"]}])
    wait_all_connected(stack, ["everything"])
    sid = stack.open(auto_approve=True).session_id
    chunks: list[str] = []

    def interrupt_at_the_first_stage(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "tool_chunk":
            chunks.append(event.tool_chunk.text)
            if len(chunks) == 1:
                conv.send(loop_pb2.ClientMessage(interrupt=loop_pb2.Interrupt(scope=loop_pb2.INTERRUPT_SCOPE_TURN)))

    with caplog.at_level(logging.INFO, logger="ai_coding.mcp_gateway.tasks"):
        events = stack.start(sid, "research tides").drain(interrupt_at_the_first_stage)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("cancelled" in r.getMessage() for r in caplog.records):
            time.sleep(0.1)
    assert chunks[0] == "Gathering sources...", chunks
    assert status_name(finished(events)) == "interrupted"
    said = [r.getMessage() for r in caplog.records if r.name == "ai_coding.mcp_gateway.tasks"]
    assert any("(simulate-research-query) cancelled: the server says cancelled" in m for m in said), said
