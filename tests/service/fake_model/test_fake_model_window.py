"""The fake model enforces a context window the way a provider does: an over-long request is refused
with the context_length error, nothing of the script is used, and the refusal is on record."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from services.fake_model import FakeModelServer, ScriptError, parse_script
from services.loop.core.ports import ModelError
from services.loop.model.client import OpenAIModelClient
from services.loop.model.settings import ModelSettings

Start = Callable[..., FakeModelServer]


def post(server: FakeModelServer, content: str) -> httpx2.Response:
    return httpx2.post(f"{server.url}/chat/completions",
                       json={"model": "m", "messages": [{"role": "user", "content": content}]})


def test_a_request_over_the_window_gets_the_context_length_error_and_consumes_no_step(fake_model: Start) -> None:
    server = fake_model({"context_window": 100, "steps": [{"text": "fits"}]})
    refused = post(server, "x" * 2000)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "maximum context length is 100 tokens" in error["message"]
    assert len(server.over_window) == 1 and server.over_window[0] > 100
    served = post(server, "short")
    assert served.status_code == 200 and served.json()["choices"][0]["message"]["content"] == "fits"


def test_the_constructor_window_overrides_the_script_and_zero_means_unlimited(fake_model: Start) -> None:
    server = fake_model({"context_window": 50, "steps": [{"text": "ok"}]}, context_window=0)
    assert post(server, "x" * 5000).status_code == 200
    assert server.over_window == []


def test_our_model_client_reports_the_refusal_as_a_context_length_model_error(fake_model: Start) -> None:
    server = fake_model([{"text": "never"}], context_window=64)
    client = OpenAIModelClient(ModelSettings(name="f", provider="generic", model="fake-model", base_url=server.url,
                                             api_key="k", max_retries=2))

    async def step() -> Any:
        return await client.step([{"role": "user", "content": "y" * 4000}], [], on_text=lambda _: None,
                                 on_reasoning=lambda _: None, timeout_seconds=10)

    with pytest.raises(ModelError) as caught:
        asyncio.run(step())
    assert caught.value.reason == "context_length"
    assert len(server.chat_requests) == 1  # not retried: only compaction can make it fit


@pytest.mark.parametrize("bad", [-1, "32k", True])
def test_a_bad_context_window_in_a_script_is_a_clear_script_error(bad: Any) -> None:
    with pytest.raises(ScriptError, match="context_window"):
        parse_script({"context_window": bad, "steps": []})
