"""The model client against the real fake model server (real HTTP, real SSE, real openai package)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from services.loop.core.ports import ModelError, StepResult
from services.loop.model.client import OpenAIModelClient
from services.loop.model.settings import ModelSettings

USER = [{"role": "user", "content": "fix the bug"}]
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer([]) as server:
        yield server


def settings(url: str, **kw: Any) -> ModelSettings:
    base: dict[str, Any] = {"name": "fake", "model": "fake-model", "provider": "generic", "base_url": url,
                            "api_key": "k", "step_timeout_seconds": 30.0}
    base.update(kw)
    return ModelSettings(**base)


class Sink:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1
        self.text.clear()
        self.reasoning.clear()


def run_step(client: OpenAIModelClient, sink: Sink, *, with_reset: bool = False, timeout: float = 30.0,
             messages: list[dict[str, Any]] | None = None) -> StepResult:
    async def go() -> StepResult:
        try:
            return await client.step(messages or USER, TOOLS, on_text=sink.text.append,
                                     on_reasoning=sink.reasoning.append, timeout_seconds=timeout,
                                     on_reset=sink.reset if with_reset else None)
        finally:
            await client.close()

    return asyncio.run(go())


def test_text_reasoning_and_split_tool_calls_arrive_assembled(fake: FakeModelServer) -> None:
    fake.load_script([{"reasoning": "Let me look at the code first.", "text": "I'll read calc.py now.",
                       "chunk_chars": 5,
                       "tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}},
                                      {"name": "bash", "arguments": {"command": "pytest -q"}}]}])
    sink = Sink()
    result = run_step(OpenAIModelClient(settings(fake.url)), sink)
    assert len(sink.text) > 1, "text should stream in several deltas"
    assert "".join(sink.text) == result.text == "I'll read calc.py now."
    assert "".join(sink.reasoning) == result.reasoning == "Let me look at the code first."
    assert [(c.name, c.arguments(), c.parse_error) for c in result.tool_calls] == [
        ("read", {"path": "calc.py"}, ""), ("bash", {"command": "pytest -q"}, "")]
    assert all(c.id for c in result.tool_calls)
    assert result.finish_reason == "tool_calls"
    body = fake.chat_requests[-1].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == TOOLS


def test_malformed_tool_arguments_become_a_parse_error_not_a_crash(fake: FakeModelServer) -> None:
    fake.load_script([{"tool_calls": [{"name": "edit", "arguments_raw": '{"path": "a.py", "old'}]}])
    result = run_step(OpenAIModelClient(settings(fake.url)), Sink())
    (call,) = result.tool_calls
    assert call.name == "edit"
    assert call.parse_error.startswith("arguments are not valid JSON")
    assert call.arguments_json == '{"path": "a.py", "old'


@pytest.mark.parametrize(("shape", "cached_known"), [("openai", True), ("deepseek", True), ("bare", False)])
def test_usage_is_normalized_per_shape_and_unknown_cache_stays_none(
    fake: FakeModelServer, shape: str, cached_known: bool
) -> None:
    fake.load_script([{"text": "ok", "usage_shape": shape,
                       "usage": {"prompt_tokens": 900, "completion_tokens": 20, "cached_tokens": 512}}])
    usage = run_step(OpenAIModelClient(settings(fake.url)), Sink()).usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (900, 20)
    assert usage.total_tokens == 920
    assert usage.cached_tokens == (512 if cached_known else None)


def test_cost_appears_only_when_prices_are_configured(fake: FakeModelServer) -> None:
    script = [{"text": "ok", "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 0}}]
    fake.load_script(script)
    assert run_step(OpenAIModelClient(settings(fake.url)), Sink()).usage.cost_usd is None
    fake.load_script(script)
    priced = settings(fake.url, price_input_per_mtok=2.0, price_output_per_mtok=10.0)
    assert run_step(OpenAIModelClient(priced), Sink()).usage.cost_usd == pytest.approx((1000 * 2 + 100 * 10) / 1e6)


def test_a_429_is_retried_after_retry_after_and_then_succeeds(fake: FakeModelServer) -> None:
    fake.load_script([{"fault": {"kind": "rate_limit", "retry_after": 0.2}}, {"text": "done"}])
    client = OpenAIModelClient(settings(fake.url))
    result = run_step(client, Sink())
    assert result.text == "done"
    assert client.attempts == 2
    first, second = fake.chat_requests
    assert first.status == 429
    assert second.time - first.time >= 0.19


def test_a_500_storm_ends_in_server_error_after_the_bounded_retries(fake: FakeModelServer) -> None:
    fake.load_script([{"fault": "server_error", "repeat": "forever"}])
    client = OpenAIModelClient(settings(fake.url, max_retries=2))
    with pytest.raises(ModelError) as err:
        run_step(client, Sink())
    assert err.value.reason == "server_error"
    assert "after 3 attempts" in str(err.value)
    assert len(fake.chat_requests) == 3


def test_a_context_length_error_is_not_retried(fake: FakeModelServer) -> None:
    fake.load_script([{"fault": "context_length", "repeat": "forever"}])
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url)), Sink())
    assert err.value.reason == "context_length"
    assert len(fake.chat_requests) == 1


def test_a_refused_key_says_which_setting_to_check(fake: FakeModelServer) -> None:
    fake.load_script([{"fault": "auth_error", "repeat": "forever"}])
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url, provider="deepseek")), Sink())
    assert err.value.reason == "auth"
    assert "refused the key" in str(err.value)
    assert "DEEPSEEK_API_KEY" in str(err.value)
    assert len(fake.chat_requests) == 1


def test_an_unreachable_endpoint_names_the_url(fake: FakeModelServer) -> None:
    url = fake.url
    fake.stop()
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(url, max_retries=1)), Sink())
    assert err.value.reason == "connection"
    assert str(err.value).startswith(f"cannot reach {url}")


def test_a_base_url_without_v1_fails_at_once_and_says_which_setting_to_check(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "never reached"}])
    client = OpenAIModelClient(settings(fake.url.removesuffix("/v1")))
    with pytest.raises(ModelError) as err:
        run_step(client, Sink())
    assert err.value.reason == "bad_request" and client.attempts == 1  # a 404 is not worth retrying
    assert "models.fake.base_url" in str(err.value) and "/v1" in str(err.value)
    assert fake.remaining() == 1  # the scripted reply was never consumed


def test_a_stalled_stream_ends_at_the_step_deadline(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "partial answer", "fault": {"kind": "stall", "after_chunks": 1}}])
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url)), Sink(), timeout=1.0)
    assert err.value.reason == "timeout"


def test_a_dropped_stream_after_text_is_not_retried_without_a_reset_callback(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "first try text", "chunk_chars": 3, "fault": {"kind": "drop", "after_chunks": 2}},
                      {"text": "second"}])
    sink = Sink()
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url)), sink)
    assert err.value.reason == "connection"
    assert str(err.value).startswith(f"the stream from {fake.url} broke off")
    assert sink.text, "the partial text did reach the caller"
    assert len(fake.chat_requests) == 1


def test_a_dropped_stream_is_retried_after_a_reset_and_only_the_final_text_is_kept(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "first try text", "chunk_chars": 3, "fault": {"kind": "drop", "after_chunks": 2}},
                      {"text": "second attempt"}])
    sink = Sink()
    client = OpenAIModelClient(settings(fake.url))
    result = run_step(client, sink, with_reset=True)
    assert sink.resets == 1
    assert "".join(sink.text) == result.text == "second attempt"
    assert client.attempts == 2


def test_without_a_provider_cache_figure_the_second_step_reports_its_prefix_ratio(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "a", "usage_shape": "bare"}, {"text": "b", "usage_shape": "bare"}])
    client = OpenAIModelClient(settings(fake.url))
    history = [*USER, {"role": "assistant", "content": "a"}, {"role": "user", "content": "more"}]

    async def go() -> tuple[StepResult, StepResult]:
        def noop(_: str) -> None:
            return None
        one = await client.step(USER, TOOLS, on_text=noop, on_reasoning=noop, timeout_seconds=30)
        two = await client.step(history, TOOLS, on_text=noop, on_reasoning=noop, timeout_seconds=30)
        await client.close()
        return one, two

    one, two = asyncio.run(go())
    assert one.usage.prefix_ratio is None
    assert two.usage.prefix_ratio is not None and 0.0 < two.usage.prefix_ratio < 1.0
    # Over the bodies as the endpoint received them (compact JSON keeps the bytes we sent): the
    # second request repeats all of the first but its closing "]}".
    first, second = (json.dumps(r.body, ensure_ascii=False, separators=(",", ":")).encode()
                     for r in fake.chat_requests)
    assert second.startswith(first[:-2]) and not second.startswith(first)
    assert two.usage.prefix_ratio == pytest.approx((len(first) - 2) / len(second))


def test_the_prefix_ratio_is_not_computed_when_the_provider_reports_its_cache(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "a"}, {"text": "b"}])
    client = OpenAIModelClient(settings(fake.url))

    async def go() -> StepResult:
        def noop(_: str) -> None:
            return None
        await client.step(USER, TOOLS, on_text=noop, on_reasoning=noop, timeout_seconds=30)
        two = await client.step(USER, TOOLS, on_text=noop, on_reasoning=noop, timeout_seconds=30)
        await client.close()
        return two

    two = asyncio.run(go())
    assert two.usage.cached_tokens is not None and two.usage.cached_tokens > 0
    assert two.usage.prefix_ratio is None


def test_a_connection_dropped_before_any_output_is_retried_without_a_reset(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "lost", "fault": {"kind": "drop", "after_chunks": 0}}, {"text": "second attempt"}])
    sink = Sink()
    client = OpenAIModelClient(settings(fake.url))
    result = run_step(client, sink)
    assert result.text == "second attempt"
    assert (client.attempts, sink.resets) == (2, 0)


def test_a_keyless_local_endpoint_never_receives_the_openai_key_from_the_environment(
    fake: FakeModelServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.kernel.config import load_config
    from services.loop.model.settings import resolve_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    user = tmp_path / "config.yaml"
    user.write_text(f"models:\n  local:\n    base_url: {fake.url}\n    model: fake-model\n")
    fake.load_script([{"text": "ok"}])
    resolved = resolve_model(load_config(None, user_path=user))
    assert resolved.provider == "generic"
    run_step(OpenAIModelClient(resolved), Sink())
    (request,) = fake.chat_requests
    sent = {k.lower(): v for k, v in request.headers.items()}
    assert "sk-openai-must-not-leak" not in str(sent)
    assert sent["authorization"] == "Bearer not-needed"


def test_interleaved_conversations_on_one_client_each_compare_with_their_own_previous_request(
    fake: FakeModelServer,
) -> None:
    fake.load_script([{"text": "x", "usage_shape": "bare", "repeat": "forever"}])
    client = OpenAIModelClient(settings(fake.url))
    a1 = [{"role": "user", "content": "conversation A " * 20}]
    b1 = [{"role": "user", "content": "conversation B is different " * 20}]
    a2 = [*a1, {"role": "assistant", "content": "x"}, {"role": "user", "content": "next"}]

    async def go() -> list[StepResult]:
        def noop(_: str) -> None:
            return None
        out = [await client.step(m, [], on_text=noop, on_reasoning=noop, timeout_seconds=30) for m in (a1, b1, a2)]
        await client.close()
        return out

    _, b_first, a_second = asyncio.run(go())
    assert b_first.usage.prefix_ratio is None, "B's first request has no previous request of its own"
    assert a_second.usage.prefix_ratio is not None and a_second.usage.prefix_ratio > 0.8


def test_a_retry_after_beyond_the_budget_fails_at_once_and_says_why(fake: FakeModelServer) -> None:
    fake.load_script([{"fault": {"kind": "rate_limit", "retry_after": 120}, "repeat": "forever"}])
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url, retry_budget_seconds=5)), Sink())
    assert err.value.reason == "rate_limited"
    assert "asked to wait 120s" in str(err.value)
    assert len(fake.chat_requests) == 1


def test_the_history_reaches_the_endpoint_exactly_as_given(fake: FakeModelServer) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "fix it ✓"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print('x')\n"},
    ]
    fake.load_script([{"text": "done"}])
    client = OpenAIModelClient(settings(fake.url, max_tokens=64, temperature=0.2))
    run_step(client, Sink(), messages=history)
    body = fake.chat_requests[-1].body
    assert body["messages"] == history
    assert body["tools"] == TOOLS
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("fake-model", 64, 0.2)


def test_no_request_is_sent_when_the_callers_clock_has_run_out(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "too late"}])
    with pytest.raises(ModelError) as err:
        run_step(OpenAIModelClient(settings(fake.url)), Sink(), timeout=-0.5)
    assert err.value.reason == "timeout"
    assert fake.chat_requests == []


def test_consecutive_streamed_steps_reuse_one_connection(fake: FakeModelServer) -> None:
    fake.load_script([{"text": "one"}, {"text": "two", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]},
                      {"text": "three"}])
    client = OpenAIModelClient(settings(fake.url))

    async def three_steps() -> list[str]:
        try:
            texts = []
            for _ in range(3):
                result = await client.step(USER, TOOLS, on_text=lambda _t: None, on_reasoning=lambda _t: None,
                                           timeout_seconds=30)
                texts.append(result.text)
            return texts
        finally:
            await client.close()

    assert asyncio.run(three_steps()) == ["one", "two", "three"]
    ports = {r.client_port for r in fake.chat_requests}
    assert len(fake.chat_requests) == 3 and len(ports) == 1, ports
