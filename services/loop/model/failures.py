"""One attempt's failure, classified, and the sentence a user reads once a step gives up.

``classify`` turns what the openai package raised into an :class:`AttemptFailed`
(a stable reason, retryable or not, and the server's own words read from
``exc.body`` whatever its shape); ``give_up`` words the final ``ModelError``,
naming the setting that would change the outcome.
"""

from __future__ import annotations

from collections.abc import Iterable

import openai

from services.loop.domain import ModelCall
from services.loop.errors import ModelError
from services.loop.model.error_body import ErrorReply, read_error, rejected_param, stated_window
from services.loop.model.providers import get_provider
from services.loop.model.retry import Failure, classify_status, is_context_length, parse_retry_after
from services.loop.model.settings import ModelSettings


class AttemptFailed(Exception):
    """One attempt failed: ``failure`` says how, ``detail`` in the server's words.

    ``param`` is a request field the server refused (retry without it); ``window`` the context
    size an overflow error stated.
    """

    def __init__(self, failure: Failure, detail: str, *, param: str = "", window: int | None = None) -> None:
        super().__init__(detail)
        self.failure = failure
        self.detail = detail
        self.param = param
        self.window = window


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    while inner is not None and (inner.__cause__ or inner.__context__) and not str(inner):
        inner = inner.__cause__ or inner.__context__
    return str(inner) if inner is not None and str(inner) else str(exc)


def stream_error(reply: ErrorReply) -> AttemptFailed:
    """An error the endpoint sent inside a stream (or as an APIError without a status)."""
    text = reply.searchable
    if is_context_length(None, text):
        return AttemptFailed(Failure("context_length", False), reply.message, window=stated_window(reply))
    if "rate" in text.lower() and "limit" in text.lower():
        return AttemptFailed(Failure("rate_limited", True), reply.message)
    return AttemptFailed(Failure("server_error", True), reply.message)


def classify(exc: Exception, sent: Iterable[str]) -> AttemptFailed:
    """What the openai package raised for one attempt; ``sent`` = the optional fields in the request."""
    if isinstance(exc, openai.APITimeoutError):
        return AttemptFailed(Failure("timeout", True), "the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return AttemptFailed(Failure("connection", True), _cause(exc))
    if isinstance(exc, openai.APIStatusError):
        reply = read_error(exc.body, exc.message)
        headers = dict(exc.response.headers) if exc.response is not None else {}
        failure = classify_status(exc.status_code, reply.searchable, parse_retry_after(headers))
        detail = f"HTTP {exc.status_code}: {reply.message}"
        if failure.reason == "context_length":
            return AttemptFailed(failure, detail, window=stated_window(reply))
        param = rejected_param(reply, sent) if exc.status_code in (400, 422) else ""
        return AttemptFailed(failure, detail, param=param)
    if isinstance(exc, openai.APIError):
        return stream_error(read_error(exc.body, exc.message))
    raise exc


def give_up(s: ModelSettings, failure: Failure, detail: str, attempts: int, call: ModelCall) -> ModelError:
    """The step's error once no retry is left: what happened, where, and what to change."""
    where = s.base_url
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    reason = failure.reason
    if reason == "auth":
        row = get_provider(s.provider)
        var = row.key_env if row and row.key_env else "AI_CODING_API_KEY"
        return ModelError("auth", f"{where} refused the key for model `{s.name}` ({detail}); check "
                          f"models.{s.name}.api_key or {var}", call)
    sentences = {
        "connection": ("connection", f"cannot reach {where}{tries}: {detail}"),
        "stream_dropped": ("connection", f"the stream from {where} broke off{tries}: {detail}"),
        "context_length": ("context_length", f"the request exceeds the context of `{s.model}`: {detail}"),
        "rate_limited": ("rate_limited", f"{where} is rate limiting{tries}: {detail}"),
        "server_error": ("server_error", f"{where} failed{tries}: {detail}"),
        "timeout": ("timeout", f"{where} did not answer in time{tries}: {detail}"),
    }
    if reason in sentences:
        stable, text = sentences[reason]
        return ModelError(stable, text, call)
    if reason in ("not_found", "not_an_api"):
        return ModelError("bad_request", f"{where} is not serving Chat Completions for `{s.model}` ({detail}); "
                          f"check models.{s.name}.base_url (OpenAI-compatible servers usually serve it "
                          f"under /v1) and models.{s.name}.model", call)
    hint = next((h.format(name=s.name) for word, h in REFUSAL_HINTS if word in detail), "")
    return ModelError("bad_request", f"{where} rejected the request for `{s.model}`: {detail}{hint}", call)


# Refusals whose cause is a setting of the model entry: a word of the server's message -> that setting.
REFUSAL_HINTS = (
    ("reasoning_content", "; set models.{name}.echo_reasoning: on (the server wants earlier reasoning back)"),
)
