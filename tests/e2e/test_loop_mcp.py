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


def test_the_model_calls_an_mcp_tool_and_sees_its_result_and_the_catalog_rides_in_the_tail(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "<mcp-catalog>", "tool_calls": [{"name": "mcp_call", "arguments": {
            "server": "demo", "tool": "echo", "input": {"text": "ping"}}}]},
        {"match": "echo: ping", "text": "The server said ping back."},
    ], mcp_servers=[{"name": "demo", "type": "local", "command": [sys.executable, str(DEMO), "stdio"]}])
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    gateway = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = {s.name: s.state for s in gateway.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers}
        if states.get("demo") == mcp_gateway_pb2.SERVER_STATE_CONNECTED:
            break
        time.sleep(0.1)
    channel.close()
    _, events = stack.turn("ask the demo server to echo ping")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "The server said ping back."
    result = next(e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished")
    assert result.ok and "echo: ping" in result.output
