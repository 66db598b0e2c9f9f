"""``ai-coding acp``'s process: stdin/stdout carry the protocol, stderr the log lines an editor shows.

Anything else that prints (a library, a warning) goes to stderr: ``sys.stdout`` is pointed there,
the protocol keeps the real stdout to itself. The end of stdin ends the process cleanly; turns in
flight go on in the loop (their sessions stay, resumable and attachable).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, BinaryIO

from clients.acp import hello
from clients.acp.rpc import MAX_LINE_BYTES, Connection, Handler, Notify

DRAIN_SECONDS = 2.0
"""How long running requests may still answer after stdin closes (then they are cancelled)."""


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def serve(out: BinaryIO, version: str) -> None:
    """Answer ``initialize`` with the stdlib alone; the agent (and later grpc) load right after."""
    agents: list[Any] = []
    requests: dict[str, Handler] = {}
    notifications: dict[str, Notify] = {}
    client_caps: dict[str, Any] = {}

    async def initialize(params: dict[str, Any]) -> dict[str, Any]:
        given = params.get("clientCapabilities") if isinstance(params, dict) else None
        client_caps.clear()
        client_caps.update(given if isinstance(given, dict) else {})
        asyncio.get_running_loop().call_soon(conn.load)  # runs once the answer is written
        return hello.capabilities(version)

    def load() -> None:
        from clients.acp.agent import Agent

        agent = Agent(version, client_caps)
        agent.conn = conn
        more, notes = agent.handlers()
        requests.update(more)
        notifications.update(notes)
        requests["initialize"] = initialize
        agents.append(agent)

    requests["initialize"] = initialize
    conn = Connection(await _stdin_reader(), out, requests, notifications, loader=load)
    try:
        await conn.serve()
        await conn.drain(DRAIN_SECONDS)
    finally:
        for agent in agents:
            await agent.close()


def run_acp() -> int:
    """Serve one editor until it closes stdin; 0 on a clean end."""
    from clients.cli import connection
    from services.kernel import __version__

    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout = sys.stderr  # nothing but the protocol on the real stdout
    try:
        connection.run(serve(out, __version__))
    except KeyboardInterrupt:
        return 130
    return 0
