"""The AgentLoop servicer registered before the session runtime exists.

gRPC takes a service's handlers before the server starts; the loop's real servicer needs the
session runtime, which services/loop/main.py builds right after the service reports SERVING. This
stand-in is registered instead: each call waits until :meth:`DeferredServicer.ready` hands it the
real servicer (a fraction of a second after SERVING), then is that servicer's call. It imports
nothing of the session side, which is the point.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
from ai_coding.v1 import loop_pb2, loop_pb2_grpc


class DeferredServicer(loop_pb2_grpc.AgentLoopServicer):
    """Every AgentLoop RPC, delegated to the servicer given to :meth:`ready` once it is given."""

    def __init__(self) -> None:
        self._real: Any = None
        self._ready: asyncio.Event | None = None  # made by the first waiting call, on the server's loop

    def ready(self, servicer: loop_pb2_grpc.AgentLoopServicer) -> None:
        """Hand over the real servicer (on the server's event loop); waiting calls go on to it."""
        self._real = servicer
        if self._ready is not None:
            self._ready.set()

    async def _servicer(self) -> Any:
        if self._real is None:
            if self._ready is None:
                self._ready = asyncio.Event()
            await self._ready.wait()
        return self._real

    async def OpenSession(self, request: loop_pb2.OpenSessionLoopRequest, context: grpc.aio.ServicerContext
                          ) -> loop_pb2.OpenSessionLoopResponse:
        return await (await self._servicer()).OpenSession(request, context)  # type: ignore[no-any-return]

    async def ListSessions(self, request: loop_pb2.ListSessionsRequest, context: grpc.aio.ServicerContext
                           ) -> loop_pb2.ListSessionsResponse:
        return await (await self._servicer()).ListSessions(request, context)  # type: ignore[no-any-return]

    async def GetSession(self, request: loop_pb2.GetSessionRequest, context: grpc.aio.ServicerContext
                         ) -> loop_pb2.GetSessionResponse:
        return await (await self._servicer()).GetSession(request, context)  # type: ignore[no-any-return]

    async def RunCommand(self, request: loop_pb2.RunCommandRequest, context: grpc.aio.ServicerContext
                         ) -> loop_pb2.RunCommandResponse:
        return await (await self._servicer()).RunCommand(request, context)  # type: ignore[no-any-return]

    async def ConverseBatched(self, request_iterator: AsyncIterator[loop_pb2.ClientMessage],
                              context: grpc.aio.ServicerContext) -> AsyncIterator[loop_pb2.TurnEventBatch]:
        stream = (await self._servicer()).ConverseBatched(request_iterator, context)
        async with contextlib.aclosing(stream):
            async for batch in stream:
                yield batch

