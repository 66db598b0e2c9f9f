"""Fixtures for the gateway's service tests: a real gateway on a real unix socket,
real MCP servers in subprocesses (our own and the official npm one)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc

from services.kernel.config import load_config
from services.kernel.server import RunningServer, create_server, shutdown
from services.mcp_gateway.main import build

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "tests" / "mcp_servers" / "demo_server.py"
OAUTH = REPO / "tests" / "mcp_servers" / "oauth_server.py"
EVERYTHING = REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def demo_server(name: str, mode: str = "stdio", **extra: Any) -> dict[str, Any]:
    """A config entry for our own stdio test server."""
    return {"name": name, "type": "local", "command": [sys.executable, str(DEMO), mode], **extra}


def everything_server(name: str = "everything", **extra: Any) -> dict[str, Any]:
    """A config entry for the official @modelcontextprotocol/server-everything (from tests/node)."""
    if not EVERYTHING.is_file():
        pytest.fail("server-everything is not installed: run `npm ci --prefix tests/node`")
    return {"name": name, "type": "local", "command": ["node", str(EVERYTHING), "stdio"], **extra}


@dataclass
class Gw:
    """A running gateway and a stub to it."""

    running: RunningServer
    stub: mcp_gateway_pb2_grpc.McpGatewayStub
    home: Path

    async def servers(self) -> dict[str, mcp_gateway_pb2.ServerStatus]:
        resp = await self.stub.ListServers(mcp_gateway_pb2.ListServersRequest(), timeout=10)
        return {s.name: s for s in resp.servers}

    async def wait_state(self, name: str, *states: int, timeout: float = 60.0) -> mcp_gateway_pb2.ServerStatus:
        deadline = time.monotonic() + timeout
        while True:
            status = (await self.servers()).get(name)
            if status is not None and status.state in states:
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} never reached {states}; last: {status}")
            await asyncio.sleep(0.05)

    async def call(self, server: str, tool: str, args: str = "{}", timeout: float = 0.0,
                   call_id: str = "c1") -> tuple[list[Any], Any]:
        chunks: list[Any] = []
        result = None
        request = mcp_gateway_pb2.McpCallToolRequest(call_id=call_id, server=server, tool=tool, input_json=args,
                                                     timeout_seconds=timeout)
        async for item in self.stub.CallTool(request, timeout=120):
            if item.HasField("chunk"):
                chunks.append(item.chunk)
            else:
                result = item.result
        assert result is not None, "the stream ended without a result"
        return chunks, result


@pytest.fixture
def gateway(isolated_home: Path, short_dir: Path) -> Callable[..., contextlib.AbstractAsyncContextManager[Gw]]:
    """``async with gateway(servers) as gw``: user config with these servers, gateway on a socket."""

    @contextlib.asynccontextmanager
    async def start(servers: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> AsyncIterator[Gw]:
        cfg_dir = isolated_home / ".config" / "ai-coding"
        cfg_dir.mkdir(parents=True, exist_ok=True)
        (cfg_dir / "config.yaml").write_text(yaml.safe_dump({"mcp": {"servers": servers, **(extra or {})}}))
        config = load_config(None)
        running = await create_server(f"unix:{short_dir}/gw.sock", build(config))
        channel = grpc.aio.insecure_channel(f"unix:{short_dir}/gw.sock")
        try:
            yield Gw(running, mcp_gateway_pb2_grpc.McpGatewayStub(channel), isolated_home)
        finally:
            await channel.close()
            await shutdown(running, grace=10)

    return start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on {port}")


@pytest.fixture
def http_demo() -> Iterator[str]:
    """Our demo server over streamable HTTP; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(DEMO), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def oauth_demo() -> Iterator[str]:
    """Our OAuth-protected MCP server (with its own authorization server); yields the MCP URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(OAUTH), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
