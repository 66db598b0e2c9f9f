"""The loop's traces seen through /trace and /budget, on a real loop service with the fake model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_coding.v1 import loop_pb2

from services.loop.tracing import store
from tests.service.loop.harness import Conversation, LoopStack, finished, status_name


def command(stack: LoopStack, sid: str, name: str) -> tuple[str, dict[str, Any]]:
    done = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command=name), timeout=10)
    data: dict[str, Any] = json.loads(done.data_json)
    return done.text, data


def test_a_turn_run_from_the_queue_is_traced_and_listed_by_slash_trace(make_stack: Callable[..., LoopStack],
                                                                       workspace: Path) -> None:
    stack = make_stack([{"text": "first answer", "chunk_chars": 2, "chunk_delay_ms": 20},
                        {"text": "second answer"}])
    sid = stack.open().session_id
    conv = stack.start(sid, "first question")

    queued: list[bool] = []  # sent once: on a busy machine several deltas arrive before input_queued

    def queue_once(event: loop_pb2.TurnEvent, c: Conversation) -> None:
        if event.WhichOneof("event") == "text_delta" and not queued:
            queued.append(True)
            c.send(loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input="second question")))

    events = conv.drain(queue_once)  # the stream follows the session until the queue is empty
    assert [e.turn for e in events if e.WhichOneof("event") == "turn_finished"] == [1, 2]
    assert status_name(finished(events)) == "completed"
    ref = store.sessions(workspace)[0]
    assert sorted(ref.turn_files) == [1, 2]
    kinds = [line["kind"] for line in ref.lines(2)]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    assert [t["turn"] for t in ref.summary().turns] == [1, 2]
    text, data = command(stack, sid, "trace")
    assert "turn 1: completed" in text and "turn 2: completed" in text
    assert [t["turn"] for t in data["turns"]] == [1, 2]


def test_slash_budget_tells_no_turn_from_no_usage_from_normal_usage(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "no usage here", "usage_shape": "none"},
                        {"text": "counted", "usage": {"prompt_tokens": 120, "completion_tokens": 7}}])
    sid = stack.open().session_id
    text, data = command(stack, sid, "budget")
    assert data["state"] == "no_turn" and "no turn has run" in text
    stack.turn("one", session_id=sid)
    text, data = command(stack, sid, "budget")
    assert data["state"] == "no_usage" and "reported no token usage" in text
    stack.turn("two", session_id=sid)
    text, data = command(stack, sid, "budget")
    assert data["state"] == "usage" and "session tokens: 127" in text
    assert "· cost n/a (no price for this model: set price_input_per_mtok" in text.splitlines()[0]  # no price set


def test_slash_budget_and_trace_say_when_tracing_is_off(make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([{"text": "fine"}], loop={"traces": False})
    sid, _ = stack.turn("hello")
    text, data = command(stack, sid, "budget")
    assert data["state"] == "tracing_off" and "tracing is off" in text
    text, _ = command(stack, sid, "trace")
    assert "tracing is off" in text and store.sessions(workspace) == []
