from __future__ import annotations

import json
from typing import Any

from services.fake_model import wire
from services.fake_model.replies import stream_chunks
from services.fake_model.script import parse_step


def _deltas(raw: dict[str, Any]) -> list[dict[str, Any]]:
    step = parse_step(raw, 0)
    chunks = stream_chunks(step, completion_id="c", model="m", created=0, ids=["a", "b"][:len(step.tool_calls)],
                           include_usage=False, usage=None)
    return [choice for c in chunks for choice in c["choices"]]


def test_index_zero_sends_each_call_whole_under_index_zero() -> None:
    choices = _deltas({"wire": "index_zero", "tool_calls": [{"name": "read", "arguments": {"path": "a"}},
                                                           {"name": "read", "arguments": {"path": "b"}}]})
    calls = [c for choice in choices for c in choice["delta"].get("tool_calls", [])]
    assert [(c["index"], c["id"], c["function"]["arguments"]) for c in calls] == [
        (0, "a", '{"path": "a"}'), (0, "b", '{"path": "b"}')]


def test_no_index_sends_calls_without_index_or_id() -> None:
    choices = _deltas({"wire": "no_index", "tool_calls": [{"name": "read", "arguments": {}},
                                                         {"name": "glob", "arguments": {}}]})
    calls = [c for choice in choices for c in choice["delta"].get("tool_calls", [])]
    assert [set(c) for c in calls] == [{"type", "function"}] * 2


def test_message_shape_renames_delta() -> None:
    choices = _deltas({"wire": "message", "text": "hi"})
    assert all("message" in c and "delta" not in c for c in choices)


def test_split_surrogates_cuts_every_emoji_between_two_chunks_as_json_escapes() -> None:
    choices = _deltas({"wire": "split_surrogates", "text": "ok \U0001F600 done \U0001F680"})
    encoded = [wire.encode_chunk({"d": c["delta"]}) for c in choices]
    assert any(e.endswith(b'\\ud83d"}}') for e in encoded)
    assert any(b'"\\ude00' in e for e in encoded)
    assert "".join(json.loads(e)["d"].get("content", "") for e in encoded).encode("utf-16", "surrogatepass").decode(
        "utf-16") == "ok \U0001F600 done \U0001F680"


def test_the_deepseek_rule_refuses_a_tool_turn_without_reasoning_and_accepts_one_with_it() -> None:
    call = [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]
    base = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "plain"}, {"role": "user", "content": "t"}]
    missing = [*base, {"role": "assistant", "content": None, "tool_calls": call}, {"role": "tool", "content": "x"}]
    given = [*base, {"role": "assistant", "content": None, "tool_calls": call, "reasoning_content": "r"},
             {"role": "tool", "content": "x"}]
    assert wire.reasoning_echo_refusal(missing) == wire.DEEPSEEK_MISSING_REASONING
    assert wire.reasoning_echo_refusal(given) is None
