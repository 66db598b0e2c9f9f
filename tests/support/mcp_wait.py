"""Wait until the MCP gateway of a test stack reports a server in a given state."""

from __future__ import annotations

import time
from typing import Any

import grpc
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc


def wait_state(stack: Any, name: str, state: int, seconds: float = 60) -> None:
    """Poll the stack's gateway (``stack.gateway``) until server ``name`` is in ``state``."""
    channel = grpc.insecure_channel(stack.gateway.address.replace("unix://", "unix:"))
    gateway = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            servers = gateway.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10).servers
            if {s.name: s.state for s in servers}.get(name) == state:
                return
            time.sleep(0.1)
    finally:
        channel.close()
    raise AssertionError(f"MCP server {name} never reached state {state}")
