"""A call missing a required argument is refused with one sentence before its handler runs, and the
model can go on (every tool's definition against its schema: tests/e2e/test_tool_definitions.py)."""

from __future__ import annotations

from collections.abc import Callable

from tests.service.loop.harness import LoopStack, finished, status_name


def test_a_call_missing_a_required_argument_is_refused_before_its_handler(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([
        {"match": "look for tools", "tool_calls": [{"name": "tool_search", "arguments": {"limit": 2}}]},
        {"match": "`query` is required", "text": "I will send a query."},
    ])
    _, events = stack.turn("look for tools")
    assert status_name(finished(events)) == "completed", (finished(events).reason, stack.fake.errors)
    done = [e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished"]
    assert [(d.result.ok, d.result.error.code) for d in done] == [(False, "invalid_arguments")]
