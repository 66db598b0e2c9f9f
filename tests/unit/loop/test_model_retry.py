from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from services.loop.model.retry import (
    MAX_DELAY_SECONDS,
    Failure,
    FailureKind,
    backoff_delay,
    classify_status,
    next_wait,
    parse_retry_after,
)


@pytest.mark.parametrize(
    ("status", "message", "reason", "retryable"),
    [
        (429, "slow down", "rate_limited", True),
        (500, "boom", "server_error", True),
        (503, "overloaded", "server_error", True),
        (408, "timeout", "timeout", True),
        (401, "bad key", "auth", False),
        (403, "forbidden", "auth", False),
        (400, "This model's maximum context length is 8192 tokens", "context_length", False),
        (400, "context_length_exceeded", "context_length", False),
        (413, "payload", "context_length", False),
        (400, "unknown parameter", "bad_request", False),
        (404, "model not found", "not_found", False),
    ],
)
def test_statuses_are_classified(status: int, message: str, reason: str, retryable: bool) -> None:
    f = classify_status(status, message)
    assert (f.reason, f.retryable) == (reason, retryable)


def test_retry_after_in_seconds_milliseconds_and_http_date() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:05 GMT"}, now) == 5.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_is_honoured_exactly() -> None:
    assert backoff_delay(3, retry_after=1.5) == 1.5


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(n, rng=rng) for n in range(8)]
    for n, d in enumerate(delays):
        ceiling = min(0.5 * 2**n, MAX_DELAY_SECONDS)
        assert ceiling / 2 <= d <= ceiling
    assert len({round(d, 6) for d in delays}) == len(delays)


def test_no_retry_for_a_non_retryable_failure() -> None:
    assert next_wait(Failure(FailureKind.AUTH, False), 0, max_retries=4, waited=0, budget=60, time_left=100) is None


def test_no_retry_past_the_retry_count() -> None:
    f = Failure(FailureKind.SERVER_ERROR, True, 0.1)
    assert next_wait(f, 3, max_retries=4, waited=0, budget=60, time_left=100) == 0.1
    assert next_wait(f, 4, max_retries=4, waited=0, budget=60, time_left=100) is None


def test_no_retry_when_the_wait_exceeds_the_budget_or_the_deadline() -> None:
    f = Failure(FailureKind.RATE_LIMITED, True, 5.0)
    assert next_wait(f, 0, max_retries=4, waited=56, budget=60, time_left=100) is None
    assert next_wait(f, 0, max_retries=4, waited=0, budget=60, time_left=4.9) is None
    assert next_wait(f, 0, max_retries=4, waited=0, budget=60, time_left=6) == 5.0
