"""CPU-bound checks run off a service's event loop, under a wall-clock deadline.

A check over model-controlled text (the command policy over a 128 KiB command: up to ~0.8 s of
pure Python) must not stop the service answering health checks or other sessions. The work runs
in a worker thread; the event loop keeps its turn at least every ``sys.getswitchinterval()``
(5 ms). The checks themselves are bounded (``command_limits``), so the thread ends on its own
shortly after a deadline that the caller already reported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

CHECK_DEADLINE_S = 10.0
"""How long one policy check may take before the call it judges is refused."""


class CheckTimeout(Exception):
    """A check did not finish within its deadline (the message names the deadline)."""


async def off_loop(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args)`` in a worker thread; ``CheckTimeout`` after ``CHECK_DEADLINE_S``."""
    return await off_loop_within(CHECK_DEADLINE_S, fn, *args, **kwargs)


async def off_loop_within(deadline: float, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args)`` in a worker thread; ``CheckTimeout`` after ``deadline`` seconds."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), deadline)
    except TimeoutError:
        raise CheckTimeout(f"the check did not finish within its {deadline:g} s deadline") from None


__all__ = ["CHECK_DEADLINE_S", "CheckTimeout", "off_loop", "off_loop_within"]
