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


def test_a_session_idle_past_the_time_limit_is_evicted_and_its_next_turn_loads_it_again(
        make_stack: Callable[..., LoopStack]) -> None:
    from services.loop.session import open_sessions as runtime_module

    stack = make_stack([{"text": "first answer"}, {"text": "second answer"}], with_tools=True)
    stale, _ = stack.turn("the first task")
    fresh = stack.open().session_id
    runtime = stack.runtime
    store = runtime.sessions[stale].store
    later = runtime.sessions[stale].session.updated + runtime_module.IDLE_SESSION_SECONDS + 1
    runtime.sessions[fresh].session.updated = later  # used just now: stays
    assert stack.services.run(runtime.evict_stale(now=later)) == 1
    assert stale not in runtime.sessions and fresh in runtime.sessions
    assert stale not in store._state  # the journal's state goes with it, not only its handle
    events = stack.start(stale, "the second task").drain()
    assert status_name(finished(events)) == "completed"
    assert stale in runtime.sessions and len(runtime.sessions[stale].session.messages) == 4


def test_a_session_someone_follows_is_not_evicted_for_idleness(make_stack: Callable[..., LoopStack]) -> None:
    from services.loop.session import open_sessions as runtime_module

    stack = make_stack([{"text": "an answer"}], with_tools=True)
    sid, _ = stack.turn("a task")
    runtime = stack.runtime
    runtime.sessions[sid].attached += 1
    later = runtime.sessions[sid].session.updated + runtime_module.IDLE_SESSION_SECONDS + 1
    assert stack.services.run(runtime.evict_stale(now=later)) == 0 and sid in runtime.sessions


def test_what_the_loop_remembers_of_evicted_sessions_stays_bounded(make_stack: Callable[..., LoopStack],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from services.loop.session import open_sessions as runtime_module

    monkeypatch.setattr(runtime_module, "MAX_IDLE_SESSIONS", 2)
    monkeypatch.setattr(runtime_module, "MAX_EVICTED_REMEMBERED", 3)
    stack = make_stack([{"text": "done", "repeat": "forever"}], with_tools=True)
    opened = [stack.turn(f"task {i}")[0] for i in range(8)]  # a turn each: a session never written is not kept
    runtime = stack.runtime
    assert list(runtime._evicted) == opened[2:5]  # the three most recently evicted, oldest first
    assert len(runtime.sessions) == 3 and all(sid not in runtime.store(str(stack.workspace))._state
                                              for sid in opened[:5])
    assert stack.open(opened[0]).session_id == opened[0]  # a forgotten one opens again from disk
    assert opened[0] not in runtime._evicted


def test_every_session_shares_the_tool_definitions_of_the_tools_service(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([], with_tools=True)
    one, two = stack.open().session_id, stack.open().session_id
    runtime = stack.runtime
    first = {t.name: t for t in runtime.sessions[one].tools.all() if not t.local}
    second = {t.name: t for t in runtime.sessions[two].tools.all() if not t.local}
    assert first and first.keys() == second.keys()
    assert all(first[name] is second[name] for name in first)
