"""MCP gateway figures: per-step prompt characters and call overhead.

1. Prompt cost per step of 13 verbose remote tools registered as one function
   each (the way a naive client does it) versus the gateway's single
   ``mcp_call`` function plus the budgeted catalog text, and versus a
   two-tool whitelist registered natively. Measured on our verbose 13-tool
   server and on the official server-everything (13 tools) when installed.
2. Call overhead: the same ``echo`` call on the same stdio server, direct
   through the SDK versus through the gateway over gRPC on a unix socket.

    .venv/bin/python bench/mcp.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# This file is named mcp.py: drop its own folder from the path or it would shadow the SDK.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path[:0] = [str(REPO), str(REPO / "protos")]

import grpc  # noqa: E402
from ai_coding.v1 import mcp_gateway_pb2, mcp_gateway_pb2_grpc  # noqa: E402

from services.kernel.config import Config  # noqa: E402
from services.kernel.server import create_server, shutdown  # noqa: E402
from services.mcp_gateway.catalog import ToolEntry, render_catalog  # noqa: E402
from services.mcp_gateway.connection import open_session  # noqa: E402
from services.mcp_gateway.domain import Progress  # noqa: E402
from services.mcp_gateway.main import build  # noqa: E402
from services.mcp_gateway.settings import ServerSettings  # noqa: E402
from services.mcp_gateway.tool_schema import MCP_CALL_SCHEMA  # noqa: E402

MANY = REPO / "tests" / "mcp_servers" / "many_tools_server.py"
DEMO = REPO / "tests" / "mcp_servers" / "demo_server.py"
EVERYTHING = REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def native_functions(entries: list[ToolEntry]) -> str:
    """What registering each remote tool as its own OpenAI function puts in every request."""
    return json.dumps([
        {"type": "function", "function": {"name": e.qualified_name, "description": e.description,
                                          "parameters": dict(e.input_schema)}}
        for e in entries
    ], ensure_ascii=False)


async def discover(name: str, command: list[str]) -> list[ToolEntry]:
    settings = ServerSettings(name=name, command=tuple(command))
    async with open_session(settings) as session:
        return await session.list_tools()


async def prompt_cost() -> None:
    servers = [("many", [sys.executable, str(MANY)])]
    if EVERYTHING.is_file():
        servers.append(("everything", ["node", str(EVERYTHING), "stdio"]))
    print("per-step prompt characters added by MCP tools (JSON of the tools array + catalog text)")
    print(f"  {'server':<11} {'tools':>5} {'native':>8} {'native,2':>9} {'gateway':>8} {'catalog':>8} "
          f"{'native/gateway':>15}")
    call_schema = len(json.dumps([MCP_CALL_SCHEMA], ensure_ascii=False))
    for name, command in servers:
        entries = await discover(name, command)
        native = len(native_functions(entries))
        native_two = len(native_functions(entries[:2]))
        catalog, _ = render_catalog(entries)
        gateway = call_schema + len(catalog)
        print(f"  {name:<11} {len(entries):>5} {native:>8,} {native_two:>9,} {gateway:>8,} {len(catalog):>8,} "
              f"{native / gateway:>14.2f}x")
    print(f"  (gateway = mcp_call schema {call_schema:,} chars + catalog; native,2 = a two-tool whitelist "
          "registered natively)")


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"median {statistics.median(ordered):6.2f} ms  p90 {p90:6.2f} ms  mean {statistics.fmean(ordered):6.2f} ms"


async def direct_calls(n: int) -> list[float]:
    settings = ServerSettings(name="demo", command=(sys.executable, str(DEMO), "stdio"))

    async def ignore(_: Progress) -> None:
        return None

    samples: list[float] = []
    async with open_session(settings) as session:
        for i in range(n + 10):
            started = time.perf_counter()
            outcome = await session.call_tool("echo", {"text": f"hello {i}"}, ignore)
            if i >= 10:
                samples.append((time.perf_counter() - started) * 1000)
            assert outcome.ok
    return samples


async def gateway_calls(n: int, workdir: Path) -> list[float]:
    config = Config(data={"mcp": {"servers": [{"name": "demo", "command": [sys.executable, str(DEMO), "stdio"]}]}})
    service = build(config, sidecar=workdir / "mcp.local.yaml", auth_path=workdir / "auth.json")
    running = await create_server(f"unix:{workdir}/gw.sock", service)
    samples: list[float] = []
    try:
        async with grpc.aio.insecure_channel(f"unix:{workdir}/gw.sock") as channel:
            stub = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
            for i in range(n + 10):
                request = mcp_gateway_pb2.McpCallToolRequest(call_id=str(i), server="demo", tool="echo",
                                                             input_json=json.dumps({"text": f"hello {i}"}))
                started = time.perf_counter()
                items = [item async for item in stub.CallTool(request, timeout=60)]
                if i >= 10:
                    samples.append((time.perf_counter() - started) * 1000)
                assert items[-1].result.ok, items[-1].result
    finally:
        await shutdown(running, grace=5)
    return samples


async def overhead(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="aic-bench-", dir="/tmp") as tmp:
        direct = await direct_calls(n)
        via = await gateway_calls(n, Path(tmp))
    d, g = statistics.median(direct), statistics.median(via)
    print(f"\ncall overhead, {n} echo calls on one stdio server (first 10 of each discarded)")
    print(f"  direct SDK   {_summary(direct)}")
    print(f"  via gateway  {_summary(via)}")
    print(f"  overhead     {g - d:+.2f} ms per call at the median ({g / d:.2f}x the direct call)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    await prompt_cost()
    await overhead(args.calls)


if __name__ == "__main__":
    asyncio.run(main())
