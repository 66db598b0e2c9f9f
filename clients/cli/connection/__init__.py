"""The client's gRPC edge: typed aio calls to the loop, the memory service and the MCP gateway.

Only this package and :mod:`clients.cli.convert` import the generated protobuf modules; callers get view models
(:mod:`clients.cli.views`) and ``ClientError`` (one readable line, never a traceback).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_runner: asyncio.Runner | None = None


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


def _close() -> None:
    if _runner is not None:
        with contextlib.suppress(Exception):
            _runner.close()
