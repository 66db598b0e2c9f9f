"""Two calls of one step sent with the same id: each result stays paired with its own call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from services.loop.core.sessions import SessionStore
from tests.service.loop.harness import LoopStack, finished, status_name


def test_two_calls_sharing_an_id_each_get_their_own_result_and_the_next_request_is_paired(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b  # CALC_MARKER\n")
    (workspace / "other.py").write_text("X = 1\n")
    stack = make_stack([
        {"match": "look around", "tool_calls": [
            {"name": "read", "arguments": {"path": "calc.py"}, "id": "dup"},
            {"name": "glob", "arguments": {"pattern": "*.py"}, "id": "dup"}]},
        {"text": "Seen both."},
    ], with_tools=True)
    sid, events = stack.turn("look around")
    end = finished(events)
    assert status_name(end) == "completed", (end.reason, stack.fake.errors)

    started = [e.tool_started.call_id for e in events if e.WhichOneof("event") == "tool_started"]
    done = {e.tool_finished.result.call_id: e.tool_finished.result
            for e in events if e.WhichOneof("event") == "tool_finished"}
    assert started == ["dup", "dup_2"]
    assert set(done) == {"dup", "dup_2"}  # every call the UI saw start also finished
    assert (done["dup"].tool, done["dup_2"].tool) == ("read", "glob")
    assert "CALC_MARKER" in done["dup"].output
    assert "other.py" in done["dup_2"].output and "CALC_MARKER" not in done["dup_2"].output

    # The follow-up request carries both calls, each answered once by its own result.
    messages = stack.fake.chat_requests[-1].messages
    [assistant] = [m for m in messages if m.get("tool_calls")]
    assert [c["id"] for c in assistant["tool_calls"]] == ["dup", "dup_2"]
    tools = [m for m in messages if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["dup", "dup_2"]
    assert "CALC_MARKER" in tools[0]["content"] and "other.py" in tools[1]["content"]

    saved, _, _ = SessionStore(workspace).read(sid)
    assert [m.get("tool_call_id") for m in saved.messages if m["role"] == "tool"] == ["dup", "dup_2"]
