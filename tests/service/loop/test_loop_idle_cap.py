"""Opening sessions past the loop's idle cap: concurrent opens never trip over one eviction."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.service.loop.harness import LoopStack, finished, status_name


def test_concurrent_opens_past_the_idle_cap_all_succeed(make_stack: Callable[..., LoopStack]) -> None:
    from services.loop.session import open_sessions as runtime_module

    stack = make_stack([], with_tools=True)
    limit = runtime_module.MAX_IDLE_SESSIONS
    for _ in range(limit + 10):
        stack.open()
    with ThreadPoolExecutor(30) as pool:
        opened = list(pool.map(lambda _: stack.open().session_id, range(60)))
    assert len(set(opened)) == 60
    idle = [rt for rt in stack.runtime.sessions.values() if rt.idle]
    assert len(idle) <= limit + 1


@pytest.mark.slow
def test_five_hundred_sessions_by_twenty_clients_over_the_idle_cap_all_complete(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "done", "repeat": "forever"}], with_tools=True)

    def client(n: int) -> list[str]:
        statuses = []
        for i in range(25):
            _, events = stack.turn(f"client {n} task {i}")
            statuses.append(status_name(finished(events)))
        return statuses

    with ThreadPoolExecutor(20) as pool:
        results = [s for statuses in pool.map(client, range(20)) for s in statuses]
    assert results == ["completed"] * 500
