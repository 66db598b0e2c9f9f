"""Keep the last lines a local server wrote to stderr, so a failure can say why.

The child writes into a pipe; the gateway reads it on the event loop into a
small ring buffer (and its log at DEBUG), so a chatty server never fills a disk.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import MutableSequence
from typing import TextIO

from services.mcp_gateway.domain import LogLine

log = logging.getLogger("ai_coding.mcp_gateway.stderr")

TAIL_LINES = 20


class _Reader(asyncio.Protocol):
    def __init__(self, owner: StderrTail) -> None:
        self._owner = owner
        self._partial = b""

    def data_received(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._owner.add(line)

    def eof_received(self) -> bool | None:
        if self._partial:
            self._owner.add(self._partial)
        self._owner.eof.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.eof.set()


class StderrTail:
    """A pipe for a child's stderr and the last ``TAIL_LINES`` lines that came through it."""

    def __init__(self, server: str, kept: MutableSequence[LogLine] | None = None) -> None:
        self._server = server
        self._kept = kept
        """The server's kept log (``mcp status --logs``): every line goes there too, as ``stderr``."""
        self.lines: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.eof = asyncio.Event()
        read_fd, write_fd = os.pipe()
        self.writer: TextIO | None = os.fdopen(write_fd, "w")
        self._read_file = os.fdopen(read_fd, "rb")
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        """Start reading (call before spawning)."""
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(lambda: _Reader(self), self._read_file)

    def add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            self.lines.append(line)
            if self._kept is not None:
                self._kept.append(LogLine("stderr", "", line[:2000]))
            log.debug("%s: %s", self._server, line)

    def close_writer(self) -> None:
        """Drop the gateway's copy of the write end (the child keeps its own)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    async def last_line(self, wait: float = 0.5) -> str:
        """The last non-empty line, waiting briefly for a dying child's final words."""
        self.close_writer()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.eof.wait(), wait)
        return self.lines[-1] if self.lines else ""

    def close(self) -> None:
        self.close_writer()
        if self._transport is not None:
            self._transport.close()
        else:
            self._read_file.close()
