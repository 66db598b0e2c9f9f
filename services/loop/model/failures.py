"""One attempt's failure, classified, and the sentence a user reads once a step gives up.

``classify`` turns what the transport raised (:mod:`services.loop.model.transport`) into an
:class:`AttemptFailed` (a stable reason, retryable or not, and the server's own words read from
``exc.body`` whatever its shape); ``give_up`` words the final ``ModelError``,
naming the setting that would change the outcome.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.loop.core.domain import ModelCall
from services.loop.core.errors import ModelError
from services.loop.model.error_body import ErrorReply, read_error, rejected_param, stated_window
from services.loop.model.providers import get_provider
from services.loop.model.retry import (
    Failure,
    FailureKind,
    classify_status,
    is_context_length,
    parse_retry_after,
)
from services.loop.model.settings import ModelSettings
from services.loop.model.transport import ConnectionFailed, RequestTimedOut, StatusError


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
        return AttemptFailed(Failure(FailureKind.CONTEXT_LENGTH, False), reply.message, window=stated_window(reply))
    if "rate" in text.lower() and "limit" in text.lower():
        return AttemptFailed(Failure(FailureKind.RATE_LIMITED, True), reply.message)
    return AttemptFailed(Failure(FailureKind.SERVER_ERROR, True), reply.message)


def classify(exc: Exception, sent: Iterable[str]) -> AttemptFailed:
    """What the transport raised for one attempt; ``sent`` = the optional fields in the request."""
    if isinstance(exc, RequestTimedOut):
        return AttemptFailed(Failure(FailureKind.TIMEOUT, True), "the request timed out")
    if isinstance(exc, ConnectionFailed):
        return AttemptFailed(Failure(FailureKind.CONNECTION, True), _cause(exc))
    if isinstance(exc, StatusError):
        reply = read_error(exc.body, exc.message)
        headers = exc.headers
        failure = classify_status(exc.status_code, reply.searchable, parse_retry_after(headers))
        detail = f"HTTP {exc.status_code}: {reply.message}"
        if failure.reason is FailureKind.CONTEXT_LENGTH:
            return AttemptFailed(failure, detail, window=stated_window(reply))
        param = rejected_param(reply, sent) if exc.status_code in (400, 422) else ""
        return AttemptFailed(failure, detail, param=param)
    raise exc


# The ModelError reason (stable, what turn policy and clients read) of each kind of failure.
ERROR_REASON: dict[FailureKind, str] = {
    FailureKind.CONTEXT_LENGTH: "context_length", FailureKind.AUTH: "auth", FailureKind.RATE_LIMITED: "rate_limited",
    FailureKind.TIMEOUT: "timeout", FailureKind.SERVER_ERROR: "server_error", FailureKind.CONNECTION: "connection",
    FailureKind.STREAM_DROPPED: "connection", FailureKind.NOT_FOUND: "bad_request",
    FailureKind.NOT_AN_API: "bad_request", FailureKind.BAD_REQUEST: "bad_request",
}


def give_up(s: ModelSettings, failure: Failure, detail: str, attempts: int, call: ModelCall) -> ModelError:
    """The step's error once no retry is left: what happened, where, and what to change."""
    return ModelError(ERROR_REASON[failure.reason], _sentence(s, failure.reason, detail, attempts), call)


def _sentence(s: ModelSettings, kind: FailureKind, detail: str, attempts: int) -> str:
    where = s.base_url
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if kind is FailureKind.AUTH:
        row = get_provider(s.provider)
        var = row.key_env if row and row.key_env else "AI_CODING_API_KEY"
        return f"{where} refused the key for model `{s.name}` ({detail}); check models.{s.name}.api_key or {var}"
    if kind in (FailureKind.NOT_FOUND, FailureKind.NOT_AN_API):
        return (f"{where} is not serving Chat Completions for `{s.model}` ({detail}); check models.{s.name}.base_url "
                f"(OpenAI-compatible servers usually serve it under /v1) and models.{s.name}.model")
    sentences = {
        FailureKind.CONNECTION: f"cannot reach {where}{tries}: {detail}",
        FailureKind.STREAM_DROPPED: f"the stream from {where} broke off{tries}: {detail}",
        FailureKind.CONTEXT_LENGTH: f"the request exceeds the context of `{s.model}`: {detail}",
        FailureKind.RATE_LIMITED: f"{where} is rate limiting{tries}: {detail}",
        FailureKind.SERVER_ERROR: f"{where} failed{tries}: {detail}",
        FailureKind.TIMEOUT: f"{where} did not answer in time{tries}: {detail}",
    }
    if kind in sentences:
        return sentences[kind]
    hint = next((h.format(name=s.name) for word, h in REFUSAL_HINTS if word in detail), "")
    return f"{where} rejected the request for `{s.model}`: {detail}{hint}"


# Refusals whose cause is a setting of the model entry: a word of the server's message -> that setting.
REFUSAL_HINTS = (
    ("reasoning_content", "; set models.{name}.echo_reasoning: on (the server wants earlier reasoning back)"),
)
