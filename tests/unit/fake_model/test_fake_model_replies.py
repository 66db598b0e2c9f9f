"""Reply builders: usage shapes and cache accounting, stream deltas, split tool-call arguments."""

from __future__ import annotations

import json
from typing import Any

from services.fake_model import replies
from services.fake_model.script import parse_script


def step(**fields: Any) -> Any:
    return parse_script([fields]).steps[0]


def test_common_prefix_length_finds_the_longest_shared_start() -> None:
    assert replies.common_prefix_length("abcdef", "abcxyz") == 3
    assert replies.common_prefix_length("abc", "abcdef") == 3
    assert replies.common_prefix_length("", "abc") == 0
    assert replies.common_prefix_length("x" * 1000 + "a", "x" * 1000 + "b") == 1000


def test_openai_usage_reports_cached_tokens_from_the_previous_prompt() -> None:
    usage = replies.compute_usage(step(text="hello"), 400, "p" * 200 + "new", "p" * 200 + "old")
    assert usage is not None
    assert usage["prompt_tokens"] == 100
    assert usage["prompt_tokens_details"] == {"cached_tokens": 50}
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_deepseek_usage_splits_prompt_tokens_into_hits_and_misses() -> None:
    usage = replies.compute_usage(step(usage_shape="deepseek"), 400, "q" * 120, "q" * 120)
    assert usage is not None
    assert usage["prompt_cache_hit_tokens"] == 30
    assert usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"] == usage["prompt_tokens"]
    assert "prompt_tokens_details" not in usage


def test_bare_usage_has_no_cache_figure_and_none_has_no_usage() -> None:
    bare = replies.compute_usage(step(usage_shape="bare"), 40, "a", "a")
    assert bare is not None and set(bare) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert replies.compute_usage(step(usage_shape="none"), 40, "a", "a") is None


def test_scripted_usage_figures_override_the_estimates_and_cache_never_exceeds_prompt() -> None:
    usage = replies.compute_usage(step(usage={"prompt_tokens": 10, "cached_tokens": 99}), 4000, "", "")
    assert usage is not None
    assert usage["prompt_tokens"] == 10
    assert usage["prompt_tokens_details"]["cached_tokens"] == 10


def test_tool_call_arguments_arrive_in_several_fragments_that_rebuild_the_json() -> None:
    arguments = {"path": "calc.py", "old_string": "a + 1", "new_string": "a"}
    deltas = replies.stream_deltas(step(tool_calls=[{"name": "edit", "arguments": arguments}]), ["call_1"])
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0]["id"] == "call_1" and calls[0]["function"] == {"name": "edit", "arguments": ""}
    fragments = [c["function"]["arguments"] for c in calls[1:]]
    assert len(fragments) > 2
    assert all("id" not in c and "name" not in c["function"] for c in calls[1:])
    assert json.loads("".join(fragments)) == arguments


def test_reasoning_then_text_deltas_come_after_the_role_delta() -> None:
    deltas = replies.stream_deltas(step(reasoning="think hard about it", text="answer", chunk_chars=5), [])
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "think hard about it"
    assert "".join(d.get("content", "") for d in deltas) == "answer"
    kinds = ["reasoning" if "reasoning_content" in d else "text" for d in deltas[1:]]
    assert kinds == sorted(kinds)  # every reasoning delta precedes every text delta


def test_stream_chunks_end_with_finish_reason_then_the_usage_chunk() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    chunks = replies.stream_chunks(step(text="hi"), completion_id="c", model="m", created=0, ids=[],
                                   include_usage=True, usage=usage)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == usage
    no_usage = replies.stream_chunks(step(text="hi"), completion_id="c", model="m", created=0, ids=[],
                                     include_usage=False, usage=usage)
    assert all("usage" not in c for c in no_usage)


def test_message_text_joins_text_parts_of_list_content() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
    assert replies.last_message_text(body) == "ab"
    assert replies.last_message_text({"messages": []}) == ""
