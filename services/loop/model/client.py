"""``OpenAIModelClient``: one streamed Chat Completions step with our own retries.

Implements ``services.loop.core.ports.ModelClient``. The openai package's retries
are off (``max_retries=0``) so that every retry is visible here: 429 (with
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

The response is read through the openai package's streaming-response API
(HTTP, auth and error statuses stay the package's) but its SSE lines are
decoded here into plain dicts for the pure ``StreamAssembler``.
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
from typing import Any

import httpx2
import openai

from services.loop.core.ports import Message, ModelError, StepResult
from services.loop.model.providers import echoes_reasoning, get_provider, thinking_options, with_reasoning
from services.loop.model.retry import (
    Failure,
    classify_status,
    is_context_length,
    next_wait,
    parse_retry_after,
)
from services.loop.model.settings import ModelSettings
from services.loop.model.stream import LineSplitter, SseDecoder, StreamAssembler, completion_as_chunk
from services.loop.model.usage import normalize_usage, prefix_ratio, step_cost

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


class _AttemptFailed(Exception):
    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(detail)
        self.failure = failure
        self.detail = detail


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    while inner is not None and (inner.__cause__ or inner.__context__) and not str(inner):
        inner = inner.__cause__ or inner.__context__
    return str(inner) if inner is not None and str(inner) else str(exc)


def _stream_error(message: str, body: object) -> Failure:
    fields = body if isinstance(body, dict) else {}
    text = f"{message} {fields.get('code', '')} {fields.get('type', '')}"
    if is_context_length(None, text):
        return Failure("context_length", False)
    if "rate" in text.lower() and "limit" in text.lower():
        return Failure("rate_limited", True)
    return Failure("server_error", True)


def _classify(exc: Exception) -> _AttemptFailed:
    if isinstance(exc, openai.APITimeoutError):
        return _AttemptFailed(Failure("timeout", True), "the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return _AttemptFailed(Failure("connection", True), _cause(exc))
    if isinstance(exc, openai.APIStatusError):
        headers = dict(exc.response.headers) if exc.response is not None else {}
        failure = classify_status(exc.status_code, exc.message, parse_retry_after(headers))
        return _AttemptFailed(failure, f"HTTP {exc.status_code}: {exc.message}")
    if isinstance(exc, openai.APIError):
        return _AttemptFailed(_stream_error(exc.message, exc.body), exc.message)
    raise exc


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
    """A non-streamed reply's body as a dict; a body that is not JSON is a retryable server fault."""
    try:
        reply = json.loads(raw or b"null")
    except ValueError:
        raise _AttemptFailed(Failure("not_an_api", False), "its reply is neither an event stream nor JSON") from None
    return reply if isinstance(reply, dict) else {}


class OpenAIModelClient:
    """A ``ModelClient`` over any OpenAI-compatible endpoint."""

    def __init__(self, settings: ModelSettings, *, client: openai.AsyncOpenAI | None = None) -> None:
        self.settings = settings
        self.model_name = settings.name or settings.model
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            max_retries=0,
            timeout=settings.step_timeout_seconds,
        )
        # One client serves every session using this model, so the previous
        # request is remembered per conversation (keyed by its opening messages).
        self._previous: OrderedDict[str, bytes] = OrderedDict()
        self.attempts = 0  # attempts of the most recently finished step (observability)

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    def _request(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": with_reasoning(messages, echoes_reasoning(s.provider, s.thinking)),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = tools
        if s.max_tokens is not None:
            request["max_tokens"] = s.max_tokens
        if s.temperature is not None:
            request["temperature"] = s.temperature
        request.update(thinking_options(s.provider, s.thinking, s.reasoning_effort))
        return request

    async def _attempt(
        self,
        body: bytes,
        asm: StreamAssembler,
        on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None],
        timeout: float,
    ) -> None:
        # The raw SSE bytes are split and parsed here instead of through the package's typed
        # chunks: building a pydantic object per chunk cost half of a step's client-side
        # time (bench/model.py: ~38 ms vs ~80 ms per 40-chunk step under load).
        try:
            response = await self._client.post(
                "/chat/completions", cast_to=httpx2.Response, content=body, stream=True,
                options={"headers": JSON_HEADERS, "timeout": timeout},
            )
        except openai.APIError as exc:
            raise _classify(exc) from None
        try:
            if "event-stream" in response.headers.get("content-type", ""):
                await self._read_stream(response, asm, on_text, on_reasoning)
            else:
                self._feed(asm, completion_as_chunk(_json_object(await response.aread())), on_text, on_reasoning)
        except httpx2.TimeoutException:
            raise _AttemptFailed(Failure("timeout", True), "the endpoint stopped sending") from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise _AttemptFailed(Failure("stream_dropped", True), str(exc) or type(exc).__name__) from None
        finally:
            await response.aclose()
        if not asm.finish_reason:
            raise _AttemptFailed(Failure("stream_dropped", True), "it ended before the model finished")
        if asm.produced_nothing and asm.shapeless_choices:
            raise _AttemptFailed(Failure("not_an_api", False), f"its {asm.shapeless_choices} stream chunk(s) "
                                 "carry neither `delta` nor `message`, so nothing in them can be read")

    async def _read_stream(self, response: httpx2.Response, asm: StreamAssembler,
                           on_text: Callable[[str], None], on_reasoning: Callable[[str], None]) -> None:
        decoder = SseDecoder()
        splitter = LineSplitter()
        raw = response.aiter_raw()
        while (data := await self._next_piece(raw)) is not None:
            for line in splitter.feed(data):
                if any(self._event(asm, payload, on_text, on_reasoning) for _, payload in decoder.feed(line)):
                    await _drain(raw)
                    return
        for line in splitter.finish():
            for _, payload in decoder.feed(line):
                self._event(asm, payload, on_text, on_reasoning)
        for _, payload in decoder.finish():
            self._event(asm, payload, on_text, on_reasoning)

    async def _next_piece(self, raw: AsyncIterator[bytes]) -> bytes | None:
        """The stream's next bytes, None at its end; a stream silent past ``stream_idle_seconds``
        fails the attempt as a dropped stream (retried), instead of holding the step to its deadline."""
        idle = self.settings.stream_idle_seconds
        try:
            async with asyncio.timeout(idle):
                return await anext(raw)
        except StopAsyncIteration:
            return None
        except TimeoutError:
            raise _AttemptFailed(Failure("stream_dropped", True), f"the stream sent nothing for {idle:g} s "
                                 f"(models.{self.settings.name}.stream_idle_seconds)") from None

    @staticmethod
    def _feed(
        asm: StreamAssembler, chunk: dict[str, Any], on_text: Callable[[str], None], on_reasoning: Callable[[str], None]
    ) -> None:
        delta = asm.feed(chunk)
        if delta.reasoning:
            on_reasoning(delta.reasoning)
        if delta.text:
            on_text(delta.text)

    def _event(
        self, asm: StreamAssembler, data: str, on_text: Callable[[str], None], on_reasoning: Callable[[str], None]
    ) -> bool:
        """Handle one SSE data payload; True at ``[DONE]``."""
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise _AttemptFailed(Failure("server_error", True), "the endpoint sent a malformed stream chunk") from None
        if not isinstance(chunk, dict):
            return False
        if chunk.get("error"):
            error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            message = str(error.get("message") or "an error occurred during streaming")
            raise _AttemptFailed(_stream_error(message, error), message)
        self._feed(asm, chunk, on_text, on_reasoning)
        return False

    def _error(self, failure: Failure, detail: str, attempts: int) -> ModelError:
        s = self.settings
        where = s.base_url
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if failure.reason == "auth":
            row = get_provider(s.provider)
            var = row.key_env if row and row.key_env else "AI_CODING_API_KEY"
            return ModelError(
                "auth", f"{where} refused the key for model `{s.name}` ({detail}); check models.{s.name}.api_key or {var}"
            )
        if failure.reason == "connection":
            return ModelError("connection", f"cannot reach {where}{tries}: {detail}")
        if failure.reason == "stream_dropped":
            return ModelError("connection", f"the stream from {where} broke off{tries}: {detail}")
        if failure.reason == "context_length":
            return ModelError("context_length", f"the request exceeds the context of `{s.model}`: {detail}")
        if failure.reason == "rate_limited":
            return ModelError("rate_limited", f"{where} is rate limiting{tries}: {detail}")
        if failure.reason == "server_error":
            return ModelError("server_error", f"{where} failed{tries}: {detail}")
        if failure.reason == "timeout":
            return ModelError("timeout", f"{where} did not answer in time{tries}: {detail}")
        if failure.reason in ("not_found", "not_an_api"):
            return ModelError("bad_request", f"{where} is not serving Chat Completions for `{s.model}` ({detail}); "
                              f"check models.{s.name}.base_url (OpenAI-compatible servers usually serve it "
                              f"under /v1) and models.{s.name}.model")
        return ModelError("bad_request", f"{where} rejected the request for `{s.model}`: {detail}")

    def _result(self, asm: StreamAssembler, request: dict[str, Any], body: bytes, started: float) -> StepResult:
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
        )

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
        (a retry after streamed text calls ``on_reset`` instead).
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
        attempts = 0
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + limit):
                while True:
                    asm = StreamAssembler()
                    attempts += 1
                    try:
                        await self._attempt(body, asm, on_text, on_reasoning, max(deadline - time.monotonic(), 0.1))
                        self.attempts = attempts
                        return self._result(asm, request, body, started)
                    except _AttemptFailed as failed:
                        wait = next_wait(
                            failed.failure,
                            attempts - 1,
                            max_retries=s.max_retries,
                            waited=waited,
                            budget=s.retry_budget_seconds,
                            time_left=deadline - time.monotonic(),
                        )
                        if wait is None or (asm.streamed_anything and on_reset is None):
                            self.attempts = attempts
                            detail = failed.detail
                            after = failed.failure.retry_after
                            if wait is None and after is not None and attempts <= s.max_retries:
                                detail += f" (asked to wait {after:g}s, beyond this step's retry budget)"
                            raise self._error(failed.failure, detail, attempts) from None
                        if asm.streamed_anything and on_reset is not None:
                            on_reset()
                        elif on_retry is not None:
                            on_retry(f"{failed.detail}; retrying in {wait:.1f} s (attempt {attempts + 1})")
                        waited += wait
                        await asyncio.sleep(wait)
        except TimeoutError:
            raise ModelError("timeout", f"the model step exceeded its {limit:.0f}s deadline") from None
