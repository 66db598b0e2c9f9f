"""Server interceptors: bearer-token auth for TCP, request ids and call logging.

Cross-cutting work lives here, not in servicer methods (STYLE.md).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import grpc

from services.kernel.ids import new_id
from services.kernel.on_demand import CallActivity

REQUEST_ID_KEY = "x-request-id"
request_id_var: ContextVar[str] = ContextVar("request_id", default="")

log = logging.getLogger("ai_coding.rpc")

_KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def _metadata(details: grpc.HandlerCallDetails) -> dict[str, str]:
    return {k: v if isinstance(v, str) else v.decode() for k, v in (details.invocation_metadata or ())}


def _replace(handler: grpc.RpcMethodHandler, kind: str, behavior: Any) -> grpc.RpcMethodHandler:
    factory = getattr(grpc, f"{kind}_rpc_method_handler")
    return factory(
        behavior,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def _kind(handler: grpc.RpcMethodHandler) -> str:
    for kind in _KINDS:
        if getattr(handler, kind) is not None:
            return kind
    raise ValueError("handler has no behavior")


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Reject any call without ``authorization: Bearer <token>`` (constant-time compare)."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        got = _metadata(details).get("authorization", "").encode()
        if got and hmac.compare_digest(got, self._expected):
            return handler
        kind = _kind(handler)

        async def deny_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

        async def deny_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            yield  # pragma: no cover - makes this an async generator

        return _replace(handler, kind, deny_stream if kind.endswith("_stream") else deny_unary)


class ContextInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Put the caller's request id (or a new one) in ``request_id_var``; log each call; count the
    calls in flight in ``activity`` (health checks and reflection are not calls of the service)."""

    def __init__(self, service: str, activity: CallActivity | None = None) -> None:
        self._service = service
        self.activity = activity or CallActivity()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        rid = _metadata(details).get(REQUEST_ID_KEY) or new_id("r")
        method = details.method
        kind = _kind(handler)
        inner = getattr(handler, kind)
        if method.startswith("/grpc.health") or method.startswith("/grpc.reflection"):
            return handler
        activity = self.activity

        if kind.endswith("_stream"):

            async def wrapped_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                token = request_id_var.set(rid)
                start = time.perf_counter()
                activity.begin()
                try:
                    async for item in inner(request, context):
                        yield item
                finally:
                    activity.end()
                    log.debug("%s %s %.1fms", rid, method, (time.perf_counter() - start) * 1000)
                    # A stream cancelled by its client is closed from another task's context, where
                    # this token cannot be reset (ValueError); that context does not outlive it anyway.
                    with contextlib.suppress(ValueError):
                        request_id_var.reset(token)

            return _replace(handler, kind, wrapped_stream)

        async def wrapped_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            token = request_id_var.set(rid)
            start = time.perf_counter()
            activity.begin()
            try:
                return await inner(request, context)
            finally:
                activity.end()
                log.debug("%s %s %.1fms", rid, method, (time.perf_counter() - start) * 1000)
                request_id_var.reset(token)

        return _replace(handler, kind, wrapped_unary)
