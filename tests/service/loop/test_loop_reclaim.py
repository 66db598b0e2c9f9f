"""Sessions dropped from the loop's memory are given back within a bound, not when CPython's own
collector gets round to them (services/loop/session/reclaim.py).

Each test switches the collector's automatic runs off, so only the loop's own collections free
an evicted session: without them every dropped runtime stays in memory."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.service.loop.harness import LoopStack, finished, status_name


@pytest.fixture
def no_automatic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def bound(monkeypatch: pytest.MonkeyPatch, *, idle: int, every: int, events: int = 10**9) -> None:
    from services.loop.session import open_sessions, reclaim

    monkeypatch.setattr(open_sessions, "MAX_IDLE_SESSIONS", idle)
    monkeypatch.setattr(reclaim, "COLLECT_EVERY_EVICTIONS", every)
    monkeypatch.setattr(reclaim, "COLLECT_EVERY_EVENTS", events)


def waiting(refs: list[weakref.ref[Any]], open_ids: set[str]) -> int:
    """Dropped runtimes still alive."""
    return sum(1 for ref in refs if (rt := ref()) is not None and rt.session.id not in open_ids)


def test_dropped_sessions_wait_for_at_most_the_collection_bound(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch, no_automatic_gc: None) -> None:
    bound(monkeypatch, idle=2, every=3)
    stack = make_stack([{"text": "done", "repeat": "forever"}])
    runtime = stack.runtime
    refs: list[weakref.ref[Any]] = []
    most = 0
    for i in range(12):
        sid, events = stack.turn(f"task {i}")
        assert status_name(finished(events)) == "completed"
        refs.append(weakref.ref(runtime.sessions[sid]))
        most = max(most, waiting(refs, set(runtime.sessions)))
    assert len(refs) - len(runtime.sessions) >= 9  # nine or more were dropped ...
    assert most <= 2  # ... and never more than two of them (every - 1) were still in memory
    assert runtime.reclaim.collections >= 3


def test_a_dropped_session_holding_a_full_window_of_events_is_given_back_at_once(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch, no_automatic_gc: None) -> None:
    bound(monkeypatch, idle=1, every=1000, events=3)
    stack = make_stack([{"text": "done", "repeat": "forever"}])
    runtime = stack.runtime
    sid, _ = stack.turn("a turn streams more than three events")
    assert runtime.sessions[sid].events.held > 3
    ref = weakref.ref(runtime.sessions[sid])
    stack.open()  # no event yet: one idle session besides it is allowed
    stack.open()  # the cap drops the oldest, the one with the events
    assert sid not in runtime.sessions
    assert ref() is None and runtime.reclaim.collections == 1


def test_the_idle_sweep_collects_what_waits_below_the_bound(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch, no_automatic_gc: None) -> None:
    bound(monkeypatch, idle=1, every=1000)
    stack = make_stack([{"text": "done", "repeat": "forever"}])
    runtime = stack.runtime
    first, _ = stack.turn("the first task")
    ref = weakref.ref(runtime.sessions[first])
    stack.turn("the second task")
    stack.turn("the third task")
    assert first not in runtime.sessions and ref() is not None  # dropped, below the bound: waiting

    async def sweep_a_little() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(runtime.sweep(every=0.05), 0.5)

    stack.services.run(sweep_a_little())
    assert ref() is None and runtime.reclaim.pending == 0
