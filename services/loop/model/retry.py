"""Which model failures to retry and how long to wait (pure).

Retryable: 429 (honouring Retry-After), 408, 5xx, dropped connections and
dropped streams. Not retried: context length (the caller compacts), auth,
other 4xx. Backoff is exponential with jitter, bounded by a retry count and a
total wait budget, and never waits past the step's deadline.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum

BASE_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 8.0

_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long"
    r"|input is too long|reduce the length|exceeds the model's"
    # llama.cpp: "request (9120 tokens) exceeds the available context size (8192 tokens)",
    # type exceed_context_size_error; Gemini: "The input token count (N) exceeds the maximum
    # number of tokens allowed (M)".
    r"|exceeds the available context size|exceed_context_size|input token count.*exceeds the maximum",
    re.IGNORECASE,
)


class FailureKind(StrEnum):
    """How one attempt failed (``ModelError`` reasons are derived from it in failures.py)."""

    CONTEXT_LENGTH = "context_length"
    AUTH = "auth"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    SERVER_ERROR = "server_error"
    NOT_FOUND = "not_found"
    BAD_REQUEST = "bad_request"
    CONNECTION = "connection"
    STREAM_DROPPED = "stream_dropped"
    NOT_AN_API = "not_an_api"


@dataclass(frozen=True)
class Failure:
    """One classified failure: a stable reason and whether it is worth retrying."""

    reason: FailureKind
    retryable: bool
    retry_after: float | None = None


def is_context_length(status: int | None, message: str) -> bool:
    """True when an error says the request exceeds the model's context."""
    return (status in (400, 413, 422, None) and bool(_CONTEXT_LENGTH.search(message))) or status == 413


def classify_status(status: int, message: str, retry_after: float | None = None) -> Failure:
    """Classify an HTTP error status from the endpoint."""
    if is_context_length(status, message):
        return Failure(FailureKind.CONTEXT_LENGTH, False)
    if status in (401, 403):
        return Failure(FailureKind.AUTH, False)
    if status == 429:
        return Failure(FailureKind.RATE_LIMITED, True, retry_after)
    if status == 408:
        return Failure(FailureKind.TIMEOUT, True, retry_after)
    if status >= 500:
        return Failure(FailureKind.SERVER_ERROR, True, retry_after)
    if status == 404:  # a base_url without /v1, or a model name the endpoint does not serve
        return Failure(FailureKind.NOT_FOUND, False)
    return Failure(FailureKind.BAD_REQUEST, False)


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def backoff_delay(attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Wait before retry number ``attempt`` (0-based): Retry-After if given, else jittered exponential."""
    if retry_after is not None:
        return retry_after
    ceiling = min(BASE_DELAY_SECONDS * (1 << min(attempt, 30)), MAX_DELAY_SECONDS)
    draw = rng.random() if rng is not None else random.random()
    return ceiling * (0.5 + 0.5 * draw)


def next_wait(
    failure: Failure,
    attempt: int,
    *,
    max_retries: int,
    waited: float,
    budget: float,
    time_left: float,
    rng: random.Random | None = None,
) -> float | None:
    """Seconds to wait before retrying, or None to give up now."""
    if not failure.retryable or attempt >= max_retries:
        return None
    delay = backoff_delay(attempt, failure.retry_after, rng)
    if waited + delay > budget or delay >= time_left:
        return None
    return delay
