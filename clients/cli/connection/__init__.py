"""The client's gRPC edge: typed aio calls to the loop, the memory service and the MCP gateway.

Only this package and :mod:`clients.cli.convert` import the generated protobuf modules; callers get view models
(:mod:`clients.cli.views`) and ``ClientError`` (one readable line, never a traceback).

A client process runs every call on one event loop (:func:`run`) over one channel per service
(:func:`shared_channel`), made on first use and closed at exit, on that loop, before the loop
itself closes. A ``run --session`` used to make five channels (two health checks, ListSessions,
OpenSession, the turn stream), each closed and dropped after its call: every drop shut gRPC's
aio completion queue and its poller thread down and the next call started new ones (18
``grpc_init`` and 17 ``grpc_shutdown`` in one run, read from ``GRPC_TRACE=api``), and the turn
stream's channel was only released by the garbage collector at interpreter exit, after the
loop had closed. Neither happens now: gRPC is set up once per process and torn down once, in order.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import grpc

    from services.kernel.endpoints import Endpoint

T = TypeVar("T")

_runner: asyncio.Runner | None = None
_channels: dict[tuple[str, str, tuple[tuple[str, object], ...]], grpc.aio.Channel] = {}


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on the process's one event loop (the commands' sync entry points use this).

    One loop, not an ``asyncio.run`` per call: gRPC's aio poller stays bound to the loop it first
    served, and after a second ``asyncio.run`` it was seen calling into the closed first loop
    ("Event loop is closed" printed from a callback)."""
    global _runner
    if _runner is None:
        _runner = asyncio.Runner()
        atexit.register(_close)
    return _runner.run(main)


def shared_channel(endpoint: Endpoint, options: Sequence[tuple[str, object]] = ()) -> grpc.aio.Channel | None:
    """The process's channel to ``endpoint`` when called on the loop of :func:`run` (made on first
    use, closed at exit); None on any other loop (a benchmark's own): the caller then makes and
    closes a channel of its own."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if _runner is None or running is not _runner.get_loop():
        return None
    key = _key(endpoint, options)
    channel = _channels.get(key)
    if channel is None:
        from services.kernel.channels import aio_channel

        channel = _channels[key] = aio_channel(endpoint, options=list(options))
    return channel


def _key(endpoint: Endpoint, options: Sequence[tuple[str, object]]) -> tuple[str, str, tuple[tuple[str, object], ...]]:
    """One channel per service, target and arguments (two services on one socket keep their own)."""
    return endpoint.service, str(endpoint), tuple(options)


async def drop_channel(endpoint: Endpoint, options: Sequence[tuple[str, object]] = ()) -> None:
    """Close and forget the process's channel to ``endpoint`` (a call on the loop of :func:`run`): the
    next call makes a fresh one. For a channel whose service did not answer: gRPC keeps such a channel
    in reconnect backoff, and a call made during it fails at once even after the service came up."""
    channel = _channels.pop(_key(endpoint, options), None)
    if channel is not None:
        with contextlib.suppress(Exception):
            await channel.close()


async def _close_channels() -> None:
    channels = list(_channels.values())
    _channels.clear()
    for channel in channels:
        with contextlib.suppress(Exception):
            await channel.close()


def _close() -> None:
    """At exit: close the channels on the loop (their calls end while it still runs), then the loop."""
    global _runner
    runner, _runner = _runner, None
    if runner is None:
        return
    with contextlib.suppress(Exception):
        runner.run(_close_channels())
    with contextlib.suppress(Exception):
        runner.close()
