"""Concurrent opens of one stored session that is not in memory build one runtime, not one each.

Loading a session and attaching its tools awaits; two opens overlapping there (a REPL's follower and
its driver re-opening after a loop restart, or two clients resuming an evicted session) each built a
``SessionRuntime`` over the same journal, and the last one registered silently replaced the other."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.service.loop.harness import LoopStack, finished, status_name


def test_concurrent_reopens_of_an_evicted_session_share_one_runtime(
        make_stack: Callable[..., LoopStack], monkeypatch: pytest.MonkeyPatch) -> None:
    from services.loop.session import open_sessions as runtime_module

    built: list[str] = []
    original = runtime_module.SessionRuntime  # type: ignore[attr-defined]

    class Counting(original):  # type: ignore[misc, valid-type]
        def __init__(self, session: Any, *args: Any, **kwargs: Any) -> None:
            built.append(session.id)
            super().__init__(session, *args, **kwargs)

    monkeypatch.setattr(runtime_module, "SessionRuntime", Counting)
    monkeypatch.setattr(runtime_module, "MAX_IDLE_SESSIONS", 1)
    stack = make_stack([{"text": "done", "repeat": "forever"}], with_tools=True)
    first = stack.open().session_id
    _, events = stack.turn("remember this", session_id=first)
    assert status_name(finished(events)) == "completed"
    for _ in range(2):
        stack.open()  # pushes `first` out of memory (idle cap 1)
    assert first not in stack.runtime.sessions
    built.clear()

    with ThreadPoolExecutor(8) as pool:
        opened = list(pool.map(lambda _: stack.open(first).session_id, range(8)))

    assert opened == [first] * 8
    assert built == [first], built  # one runtime for the eight opens
    _, events = stack.turn("and now?", session_id=first)
    assert status_name(finished(events)) == "completed"
    assert not stack.runtime._opening  # nothing left behind once the opens are done
