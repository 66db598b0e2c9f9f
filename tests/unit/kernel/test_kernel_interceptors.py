"""The request-id interceptor around a server stream closed from another task (a cancelled client)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from typing import Any

import grpc

from services.kernel.interceptors import ContextInterceptor, request_id_var


class _Details:
    def __init__(self, method: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self.method = method
        self.invocation_metadata = metadata


def test_a_stream_closed_from_another_context_ends_without_an_error() -> None:
    seen: list[str] = []

    async def events(request: Any, context: Any) -> AsyncIterator[int]:
        for n in range(100):
            seen.append(request_id_var.get())
            yield n
            await asyncio.sleep(0)

    handler = grpc.unary_stream_rpc_method_handler(events)
    details: Any = _Details("/x.Y/Events", (("x-request-id", "r-test"),))

    async def run() -> None:
        async def continuation(_: Any) -> grpc.RpcMethodHandler:
            return handler

        wrapped = await ContextInterceptor("x").intercept_service(continuation, details)
        stream = wrapped.unary_stream(None, None)
        # Read in one context, close in another: what grpc does when a client cancels mid-stream.
        await asyncio.create_task(stream.__anext__(), context=contextvars.copy_context())
        await asyncio.create_task(stream.aclose(), context=contextvars.copy_context())

    asyncio.run(run())
    assert seen == ["r-test"]
