"""``OpenAIModelClient``: one streamed Chat Completions step with our own retries.

Implements ``services.loop.core.ports.ModelClient``. The HTTP layer
(:mod:`services.loop.model.transport`) never retries, so that every retry is visible here: 429 (with
Retry-After), 408, 5xx, dropped connections and dropped streams are retried
with jittered exponential backoff, bounded by ``max_retries`` and
``retry_budget_seconds``, all inside the step deadline.

Partial output and retries: text and reasoning stream to ``on_text`` /
``on_reasoning`` as they arrive. If a stream drops after some of it was
delivered, the step is retried only when the caller passed ``on_reset``: it
is called before the new attempt and means "discard what this step streamed
so far". A caller that passes no ``on_reset`` gets a ``ModelError`` instead,
so it never shows text twice. ``StepResult`` always holds the final attempt
only.

The response streams over ``httpx2`` (:mod:`services.loop.model.transport`: the
openai package is not imported, its type tree cost the loop's start ~0.5 s) and its
SSE lines are decoded here into plain dicts for the pure ``StreamAssembler``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import httpx2

from services.loop.core.domain import ModelCall
from services.loop.core.ports import Message, ModelError, StepResult
from services.loop.model.error_body import read_error
from services.loop.model.failures import ERROR_REASON, AttemptFailed, classify, give_up, stream_error
from services.loop.model.providers import (
    ThinkingFormat,
    echoes_reasoning,
    get_provider,
    server_of,
    think_tags_by_family,
    thinking_options,
    with_reasoning,
)
from services.loop.model.retry import Failure, FailureKind, next_wait
from services.loop.model.settings import ModelSettings
from services.loop.model.stream import (
    LineSplitter,
    SseDecoder,
    StreamAssembler,
    completion_as_chunk,
    foreign_shape,
)
from services.loop.model.transport import ModelTransport, TransportError
from services.loop.model.usage import normalize_usage, prefix_ratio, step_cost

# The fields of a request the loop can do without when a server refuses one (the core of a
# Chat Completions request, model/messages/stream/tools, is never dropped).
OPTIONAL_FIELDS = ("stream_options", "max_tokens", "temperature", "reasoning_effort", "thinking", "enable_thinking")

MAX_REMEMBERED_CONVERSATIONS = 32
JSON_HEADERS = {"Content-Type": "application/json"}


def conversation_key(messages: list[Message]) -> str:
    """A stable key for one conversation: a digest of its first message and its first user message.

    Both stay the same as the conversation grows (the system prompt alone is
    shared by every session, so the first user message tells them apart).
    """
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    head = json.dumps([messages[:1], first_user], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(head.encode(), digest_size=12).hexdigest()


def request_body(request: dict[str, Any]) -> bytes:
    """The JSON body sent for ``request``, serialized once by us.

    Going through ``chat.completions.create`` the package walks every message
    and tool schema against its TypedDicts and serializes the body again: ~1.2 ms
    per step on a small request and ~480 ms with a 400-message history (measured
    with cProfile here). Ours are plain JSON already, so the body goes out as
    bytes through the package's generic ``post`` (its HTTP client, auth,
    headers and error statuses unchanged). Keys are ordered as endpoints render
    them (options, tools, then history), so the same bytes serve the
    prefix-ratio fallback.
    """
    ordered = {k: v for k, v in request.items() if k not in ("tools", "messages")}
    if "tools" in request:
        ordered["tools"] = request["tools"]
    ordered["messages"] = request["messages"]
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode()


# How long to wait for the end of a body after [DONE]: reading it lets the HTTP client keep
# the connection for the next step (otherwise every step pays a new connection: a TLS
# handshake against a real provider); a server that holds the stream open is not waited for.
DRAIN_AFTER_DONE_SECONDS = 0.25


async def _drain(rest: AsyncIterator[bytes]) -> None:
    """Read what follows [DONE] (normally just the end of the chunked body), within a small budget."""
    with contextlib.suppress(TimeoutError, httpx2.HTTPError, httpx2.StreamError):
        async with asyncio.timeout(DRAIN_AFTER_DONE_SECONDS):
            async for _ in rest:
                pass


def _json_object(raw: bytes) -> dict[str, Any]:
    """A non-streamed reply's body as a dict; a body that is not JSON is not an API we can read."""
    try:
        reply = json.loads(raw or b"null")
    except ValueError:
        raise AttemptFailed(Failure(FailureKind.NOT_AN_API, False), "its reply is neither an event stream nor JSON") from None
    if not isinstance(reply, dict):
        return {}
    if reply.get("error"):  # an error in a 200 body
        raise stream_error(read_error(reply, "the endpoint answered with an error"))
    if "choices" not in reply:
        raise AttemptFailed(Failure(FailureKind.NOT_AN_API, False), foreign_shape(reply))
    return reply


class OpenAIModelClient:
    """A ``ModelClient`` over any OpenAI-compatible endpoint."""

    def __init__(self, settings: ModelSettings, *, client: ModelTransport | None = None) -> None:
        self.settings = settings
        self.model_name = settings.name or settings.model
        self._client = client or ModelTransport(settings.base_url, settings.api_key, settings.step_timeout_seconds)
        # One client serves every session using this model, so the previous
        # request is remembered per conversation (keyed by its opening messages).
        self._previous: OrderedDict[str, bytes] = OrderedDict()
        self.attempts = 0  # attempts of the most recently finished step (observability)
        row = get_provider(settings.provider)
        self._format = ThinkingFormat(settings.thinking_format) if settings.thinking_format else (
            row.thinking_format if row else ThinkingFormat.EFFORT)
        self._echo = settings.echo_reasoning if settings.echo_reasoning is not None else bool(row and row.echo_reasoning)
        self._think_tags = settings.think_tags if settings.think_tags is not None else think_tags_by_family(
            settings.model)
        self.dropped: set[str] = set(settings.drop_params)
        """Request fields not sent: the entry's ``drop_params`` plus any a server refused this session."""
        self._headers = {**JSON_HEADERS, **settings.headers}
        host, port = server_of(settings.base_url)
        self._call = ModelCall(provider=settings.provider or "generic", request_model=settings.model,
                               server_address=host, server_port=port, stream=True)

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    def _request(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": with_reasoning(messages, echoes_reasoning(self._echo, s.thinking)),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = tools
        if s.max_tokens is not None:
            request["max_tokens"] = s.max_tokens
        if s.temperature is not None:
            request["temperature"] = s.temperature
        request.update(thinking_options(self._format, s.thinking, s.reasoning_effort))
        request.update(s.extra_body)
        for name in self.dropped:
            request.pop(name, None)
        return request

    def _optional_fields(self, request: dict[str, Any]) -> list[str]:
        """The fields of ``request`` a server may refuse and the step still work without."""
        return [k for k in (*OPTIONAL_FIELDS, *self.settings.extra_body) if k in request]

    async def _attempt(
        self,
        body: bytes,
        asm: StreamAssembler,
        on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None],
        timeout: float,
        sent: list[str],
    ) -> None:
        # The raw SSE bytes are split and parsed here instead of through the package's typed
        # chunks: building a pydantic object per chunk cost half of a step's client-side
        # time (bench/model.py: ~38 ms vs ~80 ms per 40-chunk step under load).
        try:
            response = await self._client.post_stream("/chat/completions", body, self._headers, timeout)
        except TransportError as exc:
            raise classify(exc, sent) from None
        saw_done = False
        try:
            if "event-stream" in response.headers.get("content-type", ""):
                saw_done = await self._read_stream(response, asm, on_text, on_reasoning)
            else:
                raw_body = await response.aread()
                asm.first_chunk_at = time.monotonic()
                self._feed(asm, completion_as_chunk(_json_object(raw_body)), on_text, on_reasoning)
                saw_done = True
        except httpx2.TimeoutException:
            raise AttemptFailed(Failure(FailureKind.TIMEOUT, True), "the endpoint stopped sending") from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise AttemptFailed(Failure(FailureKind.STREAM_DROPPED, True), str(exc) or type(exc).__name__) from None
        finally:
            await response.aclose()
        self._emit(asm.end(saw_done), on_text, on_reasoning)
        if asm.produced_nothing and asm.foreign is not None and asm.chunks_without_choices == asm.chunks:
            raise AttemptFailed(Failure(FailureKind.NOT_AN_API, False), foreign_shape(asm.foreign))
        if not asm.finish_reason:
            raise AttemptFailed(Failure(FailureKind.STREAM_DROPPED, True), "it ended before the model finished")
        if asm.produced_nothing and asm.shapeless_choices:
            raise AttemptFailed(Failure(FailureKind.NOT_AN_API, False), f"its {asm.shapeless_choices} stream chunk(s) "
                                "carry neither `delta` nor `message`, so nothing in them can be read")

    async def _read_stream(self, response: httpx2.Response, asm: StreamAssembler,
                           on_text: Callable[[str], None], on_reasoning: Callable[[str], None]) -> bool:
        """Feed the event stream to ``asm``; True when it ended with ``[DONE]``."""
        decoder = SseDecoder()
        splitter = LineSplitter()
        raw = response.aiter_raw()
        while (data := await self._next_piece(raw, asm)) is not None:
            for line in splitter.feed(data):
                if any(self._event(asm, payload, on_text, on_reasoning) for _, payload in decoder.feed(line)):
                    await _drain(raw)
                    return True
        for line in splitter.finish():
            for _, payload in decoder.feed(line):
                if self._event(asm, payload, on_text, on_reasoning):
                    return True
        return any(self._event(asm, payload, on_text, on_reasoning) for _, payload in decoder.finish())

    async def _next_piece(self, raw: AsyncIterator[bytes], asm: StreamAssembler) -> bytes | None:
        """The stream's next bytes, None at its end; a stream silent past ``stream_idle_seconds``
        fails the attempt as a dropped stream (retried), instead of holding the step to its deadline."""
        idle = self.settings.stream_idle_seconds
        try:
            async with asyncio.timeout(idle):
                piece = await anext(raw)
        except StopAsyncIteration:
            return None
        except TimeoutError:
            raise AttemptFailed(Failure(FailureKind.STREAM_DROPPED, True), f"the stream sent nothing for {idle:g} s "
                                f"(models.{self.settings.name}.stream_idle_seconds)") from None
        asm.first_chunk_at = asm.first_chunk_at or time.monotonic()
        return piece

    @staticmethod
    def _emit(delta: Any, on_text: Callable[[str], None], on_reasoning: Callable[[str], None]) -> None:
        if delta.reasoning:
            on_reasoning(delta.reasoning)
        if delta.text:
            on_text(delta.text)

    def _feed(
        self, asm: StreamAssembler, chunk: dict[str, Any], on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None]
    ) -> None:
        self._emit(asm.feed(chunk), on_text, on_reasoning)

    def _event(
        self, asm: StreamAssembler, data: str, on_text: Callable[[str], None], on_reasoning: Callable[[str], None]
    ) -> bool:
        """Handle one SSE data payload; True at ``[DONE]``."""
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise AttemptFailed(Failure(FailureKind.SERVER_ERROR, True), "the endpoint sent a malformed stream chunk") from None
        if not isinstance(chunk, dict):
            return False
        if chunk.get("error"):
            raise stream_error(read_error(chunk, "an error occurred during streaming"))
        self._feed(asm, chunk, on_text, on_reasoning)
        return False

    def _result(self, asm: StreamAssembler, request: dict[str, Any], body: bytes, started: float,
                call: ModelCall) -> StepResult:
        usage = normalize_usage(asm.usage)
        s = self.settings
        # No usage reported means the cost is unknown, not zero.
        usage.cost_usd = None if asm.usage is None else step_cost(
            usage,
            input_per_mtok=s.price_input_per_mtok,
            output_per_mtok=s.price_output_per_mtok,
            cached_input_per_mtok=s.price_cached_input_per_mtok,
        )
        if usage.cached_tokens is None:
            # The fallback measure, paid only when the endpoint reports no cache figure.
            key = conversation_key(request["messages"])
            usage.prefix_ratio = prefix_ratio(self._previous.pop(key, None), body)
            self._previous[key] = body
            while len(self._previous) > MAX_REMEMBERED_CONVERSATIONS:
                self._previous.popitem(last=False)
        return StepResult(
            text=asm.text,
            reasoning=asm.reasoning,
            tool_calls=asm.tool_calls(f"call_{uuid.uuid4().hex[:8]}"),
            usage=usage,
            finish_reason=asm.finish_reason,
            latency_ms=(time.monotonic() - started) * 1000.0,
            call=replace(call, response_model=asm.response_model, response_id=asm.response_id),
        )

    def _drop(self, param: str, detail: str, on_retry: Callable[[str], None] | None) -> None:
        """A server refused ``param``: it is not sent again by this client, and the user is told once."""
        self.dropped.add(param)
        if on_retry is not None:
            on_retry(f"{detail}; retrying without `{param}`, which is no longer sent to models.{self.settings.name} "
                     f"in this session (add it to models.{self.settings.name}.drop_params to skip this check)")

    def _stated_window(self, window: int | None) -> None:
        """An overflow error stated the window: compaction's budget follows it from the retry on."""
        known = self.settings.context_window
        if window and (known is None or window < known):
            self.settings.context_window = window

    async def step(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None],
        timeout_seconds: float,
        on_reset: Callable[[], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> StepResult:
        """Run one streamed step within ``timeout_seconds`` (capped by ``step_timeout_seconds``).

        Raises ``ModelError`` with a stable reason on failure; a non-positive
        ``timeout_seconds`` means the caller's clock has run out (reason ``timeout``).
        ``on_retry(sentence)`` is told of each retry of an attempt that had streamed nothing yet
        (a retry after streamed text calls ``on_reset`` instead), and once of a field a server refused.
        """
        s = self.settings
        limit = min(timeout_seconds, s.step_timeout_seconds)
        if limit <= 0:  # the caller's clock already ran out: do not start a request
            raise ModelError("timeout", "no time was left for a model step")
        started = time.monotonic()
        deadline = started + limit
        request = self._request(messages, tools)
        body = request_body(request)
        waited = 0.0
        attempts = retries = 0
        call = replace(self._call, stream="stream" not in self.dropped)
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + limit):
                while True:
                    asm = StreamAssembler(self._think_tags)
                    attempts += 1
                    sent_at = time.monotonic()
                    try:
                        await self._attempt(body, asm, on_text, on_reasoning, max(deadline - time.monotonic(), 0.1),
                                            self._optional_fields(request))
                        self.attempts = attempts
                        return self._result(asm, request, body, started, _facts(call, attempts, sent_at, asm))
                    except AttemptFailed as failed:
                        if failed.param and failed.param not in self.dropped and not asm.streamed_anything:
                            self._drop(failed.param, failed.detail, on_retry)
                            request = self._request(messages, tools)
                            body = request_body(request)
                            continue
                        self._stated_window(failed.window)
                        wait = next_wait(
                            failed.failure,
                            retries,
                            max_retries=s.max_retries,
                            waited=waited,
                            budget=s.retry_budget_seconds,
                            time_left=deadline - time.monotonic(),
                        )
                        if wait is None or (asm.streamed_anything and on_reset is None):
                            self.attempts = attempts
                            detail = failed.detail
                            after = failed.failure.retry_after
                            if wait is None and after is not None and retries < s.max_retries:
                                detail += f" (asked to wait {after:g}s, beyond this step's retry budget)"
                            failed_call = replace(_facts(call, attempts, sent_at, asm),
                                                  error_type=self._error_type(failed.failure),
                                                  duration_ms=(time.monotonic() - started) * 1000.0)
                            raise give_up(s, failed.failure, detail, attempts, failed_call) from None
                        retries += 1
                        if asm.streamed_anything and on_reset is not None:
                            on_reset()
                        elif on_retry is not None:
                            on_retry(f"{failed.detail}; retrying in {wait:.1f} s (attempt {attempts + 1})")
                        waited += wait
                        await asyncio.sleep(wait)
        except TimeoutError:
            raise ModelError("timeout", f"the model step exceeded its {limit:.0f}s deadline",
                             replace(call, error_type="timeout", attempts=attempts,
                                     duration_ms=(time.monotonic() - started) * 1000.0)) from None

    @staticmethod
    def _error_type(failure: Failure) -> str:
        return ERROR_REASON[failure.reason]


def _facts(call: ModelCall, attempts: int, sent_at: float, asm: StreamAssembler) -> ModelCall:
    """``call`` with what this attempt observed (time to its first chunk, the attempts so far)."""
    first = (asm.first_chunk_at - sent_at) * 1000.0 if asm.first_chunk_at else 0.0
    return replace(call, attempts=attempts, first_chunk_ms=max(first, 0.0))
