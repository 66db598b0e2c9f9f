"""Injected faults as the openai client sees them, and script errors that fail loudly instead of hanging."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from services.fake_model import FakeModelServer

Start = Callable[..., FakeModelServer]
USER = [{"role": "user", "content": "hello"}]


def open_client(server: FakeModelServer, **options: Any) -> Any:
    """A real ``AsyncOpenAI`` client, typed ``Any``: these tests check wire behaviour, not SDK types."""
    return AsyncOpenAI(base_url=server.url, **{"api_key": "x", **options})


async def stream_text(server: FakeModelServer, messages: list[dict[str, Any]] = USER, **options: Any) -> str:
    async with open_client(server, **options) as client:
        stream = await client.chat.completions.create(model="m", messages=messages, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


def wait_for_records(server: FakeModelServer, count: int) -> list[Any]:
    """After a client gives up, the server's handler finishes a moment later: poll, never sleep a fixed time."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        records = server.requests
        if len(records) >= count and all(r.done for r in records):
            break
        time.sleep(0.02)
    return server.requests


def test_a_429_with_retry_after_is_retried_by_the_client_after_the_advertised_delay(fake_model: Start) -> None:
    server = fake_model([{"fault": {"kind": "rate_limit", "retry_after": 1}}, {"text": "after the wait"}])
    assert asyncio.run(stream_text(server, max_retries=2)) == "after the wait"
    limited, served = server.requests
    assert (limited.status, served.status) == (429, 200)
    # The client's own backoff without Retry-After starts at 0.375-0.5 s, so a gap of
    # at least 0.9 s shows the header was honoured.
    assert served.time - limited.time >= 0.9


def test_a_429_carries_retry_after_headers_and_the_rate_limit_code(fake_model: Start) -> None:
    server = fake_model([{"fault": {"kind": "rate_limit", "retry_after": 2.5}}])
    response = httpx2.post(f"{server.url}/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2.5" and response.headers["retry-after-ms"] == "2500"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_a_500_surfaces_as_an_internal_server_error_when_retries_are_off(fake_model: Start) -> None:
    server = fake_model([{"fault": "server_error"}])
    with pytest.raises(openai.InternalServerError) as caught:
        asyncio.run(stream_text(server, max_retries=0))
    assert caught.value.status_code == 500


def test_a_500_then_success_is_recovered_by_the_client_retry(fake_model: Start) -> None:
    server = fake_model([{"fault": "server_error"}, {"text": "recovered"}])
    assert asyncio.run(stream_text(server, max_retries=1)) == "recovered"
    assert [r.status for r in server.requests] == [500, 200]


def test_a_context_length_error_has_the_openai_code(fake_model: Start) -> None:
    server = fake_model([{"fault": "context_length"}])
    with pytest.raises(openai.BadRequestError) as caught:
        asyncio.run(stream_text(server, max_retries=0))
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length" in caught.value.message


def test_an_auth_error_and_a_required_key_both_give_401(fake_model: Start) -> None:
    scripted = fake_model([{"fault": "auth_error"}])
    with pytest.raises(openai.AuthenticationError):
        asyncio.run(stream_text(scripted, max_retries=0))
    keyed = fake_model([{"text": "secret ok"}], api_key="right-key")
    with pytest.raises(openai.AuthenticationError):
        asyncio.run(stream_text(keyed, max_retries=0))
    assert keyed.remaining() == 1  # a refused key consumes no step

    async def with_right_key() -> str:
        async with open_client(keyed, api_key="right-key") as client:
            reply = await client.chat.completions.create(model="m", messages=USER)
            return reply.choices[0].message.content or ""

    assert asyncio.run(with_right_key()) == "secret ok"


def test_a_stalled_stream_trips_the_client_timeout_and_frees_the_server(fake_model: Start) -> None:
    server = fake_model([{"text": "never finished", "chunk_chars": 3, "fault": {"kind": "stall", "after_chunks": 2}}])
    with pytest.raises((openai.APITimeoutError, httpx2.ReadTimeout)):
        asyncio.run(stream_text(server, max_retries=0, timeout=0.5))
    (record,) = wait_for_records(server, 1)
    assert record.status == 200
    assert record.error == "client disconnected"  # the server noticed the hang-up and freed its thread


def test_a_finite_stall_pauses_the_stream_then_completes_it(fake_model: Start) -> None:
    server = fake_model([{"text": "slow but whole", "fault": {"kind": "stall", "after_chunks": 1, "seconds": 0.3}}])
    assert asyncio.run(stream_text(server, max_retries=0, timeout=10)) == "slow but whole"
    (record,) = server.requests
    assert record.handling_ms >= 300 and record.overhead_ms < record.handling_ms - 250


def test_a_dropped_stream_raises_a_connection_error_in_the_client(fake_model: Start) -> None:
    server = fake_model([{"text": "cut off in the middle", "chunk_chars": 4, "fault": {"kind": "drop", "after_chunks": 3}}])
    received: list[str] = []

    async def consume() -> None:
        async with open_client(server, max_retries=0) as client:
            stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    received.append(chunk.choices[0].delta.content)

    with pytest.raises((openai.APIConnectionError, httpx2.RemoteProtocolError)):
        asyncio.run(consume())
    assert "".join(received) == "cut off "  # three chunks went out: the role chunk, "cut ", "off "
    (record,) = wait_for_records(server, 1)
    assert record.error == "dropped by script"


def test_a_request_that_does_not_match_gets_a_clear_400_and_the_step_waits(fake_model: Start) -> None:
    server = fake_model([{"name": "after-read", "match": "def add(", "text": "fixing"}])
    with pytest.raises(openai.BadRequestError) as caught:
        asyncio.run(stream_text(server, [{"role": "tool", "tool_call_id": "c", "content": "no such file"}]))
    assert caught.value.code == "fake_script_mismatch"
    assert "step 1 (after-read)" in caught.value.message
    assert "'def add('" in caught.value.message and "no such file" in caught.value.message
    assert len(server.errors) == 1
    assert asyncio.run(stream_text(server, [{"role": "user", "content": "def add(a, b):"}])) == "fixing"


def test_a_request_after_the_last_step_gets_a_script_exhausted_error(fake_model: Start) -> None:
    server = fake_model([{"text": "only one"}])
    asyncio.run(stream_text(server))
    with pytest.raises(openai.BadRequestError) as caught:
        asyncio.run(stream_text(server, max_retries=3))
    assert caught.value.code == "fake_script_exhausted"
    assert len(server.requests) == 2  # a 400 is not retried: the failure is immediate


def test_stopping_the_server_releases_a_stream_stalled_forever(fake_model: Start) -> None:
    server = fake_model([{"text": "hang", "fault": {"kind": "stall", "after_chunks": 1}}])
    outcome: list[BaseException | str] = []

    def client() -> None:
        try:
            outcome.append(asyncio.run(stream_text(server, max_retries=0, timeout=60)))
        except Exception as err:
            outcome.append(err)

    thread = threading.Thread(target=client)
    thread.start()
    deadline = time.monotonic() + 10
    while server.state()["step"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    server.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert outcome and isinstance(outcome[0], Exception)


def test_a_stopped_server_refuses_connections_and_a_restart_serves_the_same_url(fake_model: Start) -> None:
    server = fake_model([{"text": "back again"}])
    url = server.url
    server.stop()
    with pytest.raises(openai.APIConnectionError):
        asyncio.run(stream_text(server, max_retries=0, timeout=5))
    server.start()
    assert server.url == url
    assert asyncio.run(stream_text(server, max_retries=0)) == "back again"
