"""Each tool a session registers with an arguments definition: its schema is that definition's, a
valid call parses, and a missing or mistyped argument is refused with one sentence before the
handler runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from services.loop.tools.args import ArgumentError, parse_args, schema_of
from tests.service.loop.harness import LoopStack, finished, status_name

EXAMPLES: dict[str, Any] = {"string": "x", "integer": 3, "number": 1.5, "boolean": True, "array": ["a"]}
WRONG: dict[str, Any] = {"string": 7, "integer": "3", "number": "1.5", "boolean": "yes", "array": "a"}


def example(prop: dict[str, Any]) -> Any:
    return prop["enum"][0] if "enum" in prop else EXAMPLES[prop["type"]]


def test_every_defined_tool_of_a_session_sends_the_schema_its_parse_checks(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([], memory="down")
    sid = stack.open(interactive=True).session_id
    tools = [t for t in stack.runtime.sessions[sid].tools.all() if t.args is not None]
    assert {"tool_search", "ask_user", "webfetch"} <= {t.name for t in tools}
    for tool in tools:
        schema = schema_of(tool.args)
        assert tool.parameters == schema, tool.name
        valid = {name: example(prop) for name, prop in schema["properties"].items()}
        parse_args(tool.args, valid)
        for name in schema["required"]:
            with pytest.raises(ArgumentError, match=f"`{name}` is required"):
                parse_args(tool.args, {k: v for k, v in valid.items() if k != name})
        for name, prop in schema["properties"].items():
            with pytest.raises(ArgumentError, match=f"`{name}` must be"):
                parse_args(tool.args, {**valid, name: WRONG[prop["type"]]})


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
