"""An HTTP/1.1 proxy in front of a real MCP server that stalls chosen requests the way broken
servers and networks do: it accepts and never answers, sends the headers and then nothing, or
starts an SSE event and stops mid-line. Everything else is forwarded as is (one request per
upstream connection), so the handshake and the other calls are the real server's.

A test starts it in its own thread (``with StallingProxy(upstream_port, rule) as proxy``) and
reads ``proxy.open_stalls``: the stalled connections the client has not closed yet (a deadline
that ends the work closes them; one that only stops waiting leaves them open).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class Stall(Enum):
    SILENT = "silent"
    """Read the request, answer nothing."""
    HEADERS_ONLY = "headers_only"
    """Answer 200 with a JSON content type and a length, then no body."""
    SSE_MID_EVENT = "sse_mid_event"
    """Answer 200 text/event-stream and half an event, then nothing."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes


Rule = Callable[[Request], Stall | None]
"""Which requests stall, and how (None: forward)."""

_STALLED_HEADERS = {
    Stall.HEADERS_ONLY: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n",
    Stall.SSE_MID_EVENT: (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
                          b"event: message\r\ndata: {\"jsonrpc\": \"2.0\", \"id\""),
}


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, Request] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    first, *lines = head.decode("latin-1").split("\r\n")
    method, path, _ = first.split(" ", 2)
    length = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return head, Request(method, path, body)


def _closing(head: bytes) -> bytes:
    """The request head with ``Connection: close``, so the upstream ends the response by closing."""
    lines = [ln for ln in head.decode("latin-1").split("\r\n") if ln and not ln.lower().startswith("connection:")]
    return ("\r\n".join(lines) + "\r\nConnection: close\r\n\r\n").encode("latin-1")


class StallingProxy:
    """``http://127.0.0.1:{port}`` in front of ``127.0.0.1:{upstream}``, stalling what ``rule`` says."""

    def __init__(self, upstream: int, rule: Rule) -> None:
        self.upstream = upstream
        self.rule = rule
        self.port = 0
        self.stalled: list[Request] = []
        self.open_stalls = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> StallingProxy:
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while (got := await _read_request(reader)) is not None:
                head, request = got
                stall = self.rule(request)
                if stall is not None:
                    await self._stall(stall, request, reader, writer)
                    return
                await self._forward(head, request, writer)
                return  # one request per connection: the upstream's close ends the response
        writer.close()

    async def _stall(self, stall: Stall, request: Request, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        self.stalled.append(request)
        self.open_stalls += 1
        try:
            if stall in _STALLED_HEADERS:
                writer.write(_STALLED_HEADERS[stall])
                await writer.drain()
            while await reader.read(65536):  # until the client gives up and closes
                pass
        finally:
            self.open_stalls -= 1
            writer.close()

    async def _forward(self, head: bytes, request: Request, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        try:
            up_writer.write(_closing(head) + request.body)
            await up_writer.drain()
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            up_writer.close()
            writer.close()
