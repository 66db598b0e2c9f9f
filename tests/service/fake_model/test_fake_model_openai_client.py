"""The official openai client against the fake model: streaming, tool calls, reasoning, usage, models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from openai import AsyncOpenAI

from services.fake_model import FakeModelServer

Start = Callable[..., FakeModelServer]
USER = [{"role": "user", "content": "hello"}]


def run(factory: Callable[[Any], Awaitable[Any]], server: FakeModelServer, **options: Any) -> Any:
    """Open a real ``AsyncOpenAI`` client on the server, run ``factory(client)``, close the client.

    The client is typed ``Any`` here: these tests check wire behaviour, not the SDK's static types.
    """
    async def main() -> Any:
        client: Any = AsyncOpenAI(base_url=server.url, api_key="x", **options)
        async with client:
            return await factory(client)

    return asyncio.run(main())


async def collect_chunks(client: Any, **kwargs: Any) -> list[Any]:
    stream = await client.chat.completions.create(model="fake-model", messages=kwargs.pop("messages", USER),
                                                  stream=True, **kwargs)
    return [chunk async for chunk in stream]


def test_streamed_text_arrives_in_several_deltas_that_join_to_the_scripted_text(fake_model: Start) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server = fake_model([{"text": text, "chunk_chars": 5}])
    chunks = run(collect_chunks, server)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 5
    assert "".join(pieces) == text
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_split_tool_call_arguments_are_reassembled_by_the_openai_stream_helper(fake_model: Start) -> None:
    arguments = {"path": "calc.py", "old_string": "end))", "new_string": "end + 1))"}
    server = fake_model([{"text": "Fixing.", "tool_calls": [{"name": "edit", "arguments": arguments},
                                                             {"name": "read", "arguments": {"path": "b.py"}}]}])

    async def final(client: Any) -> Any:
        async with client.chat.completions.stream(model="fake-model", messages=USER) as stream:
            async for _ in stream:
                pass
            return await stream.get_final_completion()

    completion = run(final, server)
    calls = completion.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["edit", "read"]
    assert json.loads(calls[0].function.arguments) == arguments
    assert json.loads(calls[1].function.arguments) == {"path": "b.py"}
    assert calls[0].id != calls[1].id
    assert completion.choices[0].finish_reason == "tool_calls"


def test_tool_call_arguments_are_spread_over_several_raw_chunks(fake_model: Start) -> None:
    server = fake_model([{"tool_calls": [{"name": "bash", "arguments": {"command": "python3 -m unittest -q"}}]}])
    chunks = run(collect_chunks, server)
    fragments = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert fragments[0].id and fragments[0].function.name == "bash"
    assert len(fragments) > 3
    assert all(f.id is None for f in fragments[1:])


def test_malformed_arguments_raw_reach_the_client_verbatim(fake_model: Start) -> None:
    server = fake_model([{"tool_calls": [{"name": "edit", "arguments_raw": '{"path": "calc.py", "old_'}]}])
    chunks = run(collect_chunks, server)
    fragments = [c.choices[0].delta.tool_calls[0].function.arguments or ""
                 for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert "".join(fragments) == '{"path": "calc.py", "old_'


def test_reasoning_content_arrives_as_deltas_before_the_text(fake_model: Start) -> None:
    server = fake_model([{"reasoning": "First, think it through.", "text": "Answer.", "chunk_chars": 6}])
    chunks = run(collect_chunks, server)
    reasoning = [getattr(c.choices[0].delta, "reasoning_content", None) for c in chunks if c.choices]
    pieces = [r for r in reasoning if r]
    assert len(pieces) >= 3 and "".join(pieces) == "First, think it through."
    first_text = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content)
    last_reasoning = max(i for i, r in enumerate(reasoning) if r)
    assert last_reasoning < first_text


def test_openai_usage_shape_reports_cached_tokens_for_a_shared_prefix(fake_model: Start) -> None:
    server = fake_model([{"text": "one"}, {"text": "two"}])
    history = [{"role": "system", "content": "You are a careful coding agent. " * 40}, *USER]

    async def two_steps(client: Any) -> list[Any]:
        first = await collect_chunks(client, messages=history, stream_options={"include_usage": True})
        follow = [*history, {"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
        second = await collect_chunks(client, messages=follow, stream_options={"include_usage": True})
        return [first[-1].usage, second[-1].usage]

    first, second = run(two_steps, server)
    assert first.prompt_tokens > 0 and first.prompt_tokens_details.cached_tokens == 0
    assert second.prompt_tokens_details.cached_tokens > 300
    assert second.prompt_tokens_details.cached_tokens < second.prompt_tokens


def test_deepseek_usage_shape_reports_cache_hits_and_misses(fake_model: Start) -> None:
    server = fake_model([{"text": "a", "usage_shape": "deepseek"}, {"text": "b", "usage_shape": "deepseek"}])

    async def two(client: Any) -> list[Any]:
        await client.chat.completions.create(model="deepseek-chat", messages=USER)
        reply = await client.chat.completions.create(
            model="deepseek-chat", messages=[*USER, {"role": "assistant", "content": "a"}])
        return [reply.usage, reply.model]

    usage, model = run(two, server)
    extra = usage.model_extra or {}
    assert extra["prompt_cache_hit_tokens"] > 0
    assert extra["prompt_cache_hit_tokens"] + extra["prompt_cache_miss_tokens"] == usage.prompt_tokens
    assert usage.prompt_tokens_details is None
    assert model == "deepseek-chat"


def test_usage_shape_none_sends_no_usage_even_when_asked(fake_model: Start) -> None:
    server = fake_model([{"text": "a", "usage_shape": "none"}, {"text": "b", "usage_shape": "none"}])
    chunks = run(lambda c: collect_chunks(c, stream_options={"include_usage": True}), server)
    assert all(c.usage is None for c in chunks)
    reply = run(lambda c: c.chat.completions.create(model="m", messages=USER), server)
    assert reply.usage is None


def test_a_stream_carries_usage_only_when_the_request_asks_for_it(fake_model: Start) -> None:
    server = fake_model([{"text": "a", "repeat": 2}])
    without = run(collect_chunks, server)
    with_usage = run(lambda c: collect_chunks(c, stream_options={"include_usage": True}), server)
    assert all(c.usage is None for c in without)
    assert with_usage[-1].choices == [] and with_usage[-1].usage.total_tokens > 0


def test_a_non_streamed_reply_has_message_tool_calls_reasoning_and_usage(fake_model: Start) -> None:
    server = fake_model([{"reasoning": "hmm", "text": "Reading.", "tool_calls": [{"name": "read",
                                                                                  "arguments": {"path": "x"}}]}])
    reply = run(lambda c: c.chat.completions.create(model="m", messages=USER), server)
    message = reply.choices[0].message
    assert message.content == "Reading."
    assert (message.model_extra or {}).get("reasoning_content") == "hmm"
    assert message.tool_calls[0].function.name == "read"
    assert json.loads(message.tool_calls[0].function.arguments) == {"path": "x"}
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.usage.prompt_tokens_details.cached_tokens == 0


def test_models_are_listed_from_the_script(fake_model: Start) -> None:
    server = fake_model({"models": ["small", "large"], "steps": []})
    models = run(lambda c: c.models.list(), server)
    assert [m.id for m in models.data] == ["small", "large"]
    assert run(lambda c: c.models.retrieve("large"), server).id == "large"


def test_concurrent_callers_each_get_their_own_reply_in_first_match_order(fake_model: Start) -> None:
    count = 12
    server = fake_model({"order": "first_match",
                         "steps": [{"match": f"caller-{i}:", "text": f"reply-{i}", "chunk_delay_ms": 5}
                                   for i in range(count)]})

    async def all_callers(client: Any) -> list[str]:
        async def one(i: int) -> str:
            chunks = await collect_chunks(client, messages=[{"role": "user", "content": f"caller-{i}: go"}])
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

        return list(await asyncio.gather(*(one(i) for i in range(count))))

    assert run(all_callers, server) == [f"reply-{i}" for i in range(count)]
    assert server.errors == [] and server.remaining() == 0


def test_a_parent_and_its_child_get_different_replies_keyed_by_their_first_user_message(fake_model: Start) -> None:
    server = fake_model({"order": "first_match", "steps": [
        {"match_first_user": "refactor calc", "match": "tool says ok", "text": "parent reply"},
        {"match_first_user": "list the tests", "match": "tool says ok", "text": "child reply"}]})

    async def both(client: Any) -> list[str]:
        async def one(task: str) -> str:
            chunks = await collect_chunks(client, messages=[{"role": "user", "content": task},
                                                            {"role": "user", "content": "tool says ok"}])
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

        return [await one("list the tests"), await one("refactor calc")]

    assert run(both, server) == ["child reply", "parent reply"]
    assert server.errors == []
