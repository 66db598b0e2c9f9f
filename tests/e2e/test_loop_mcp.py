"""mcp_call through the loop, the real MCP gateway and a real MCP server (our demo server over stdio)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"


def _wait_connected(stack: LoopStack, name: str = "demo") -> None:
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    gateway = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            servers = gateway.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers
            if {s.name: s.state for s in servers}.get(name) == mcp_gateway_pb2.SERVER_STATE_CONNECTED:
                return
            time.sleep(0.1)
    finally:
        channel.close()
    raise AssertionError(f"MCP server {name} never connected")


def _demo(**extra: object) -> dict[str, object]:
    return {"name": "demo", "type": "local", "command": [sys.executable, str(DEMO), "stdio"], **extra}


def test_the_model_calls_an_mcp_tool_and_sees_its_result_and_the_catalog_rides_in_the_tail(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "<mcp-catalog>", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "echo", "input": {"text": "ping"}}}]},
        {"match": "echo: ping", "text": "The server said ping back."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("ask the demo server to echo ping")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "The server said ping back."
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok and "echo: ping" in result.output


def test_progress_from_an_mcp_server_reaches_the_turn_stream_as_chunks(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "count", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "count_with_progress", "input": {"steps": 3}}}]},
        {"match": "counted to 3", "text": "Counted."},
    ], mcp_servers=[_demo()])
    _wait_connected(stack)
    _, events = stack.turn("count to three")
    assert finished(events).text == "Counted."
    chunks = [e.tool_chunk for e in events if e.WhichOneof("event") == "tool_chunk"]
    assert len(chunks) >= 2 and all(c.stream == "progress" for c in chunks)


def test_a_server_deny_beats_auto_approve_and_the_call_is_refused(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "add", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "add", "input": {"a": 1234, "b": 5678}}}]},
        {"match": "permission_denied", "text": "Not allowed to add."},
    ], mcp_servers=[_demo(permissions={"deny": ["add"]})])
    _wait_connected(stack)
    sid = stack.open(auto_approve=True).session_id
    events = stack.start(sid, "add 1234 and 5678").drain()
    assert finished(events).text == "Not allowed to add."
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.error.code == "permission_denied" and "denied" in result.error.message
