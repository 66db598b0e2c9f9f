"""Cost, tokens and cache hit rate for the footer and /cost: from reported usage only, never guessed."""

from __future__ import annotations

import json

from clients.cli import views
from clients.cli.cost import NO_PRICE, cost_report, footer_parts, from_session, from_usage, usd


def test_a_priced_turn_shows_tokens_dollars_and_cache() -> None:
    usage = views.Usage(prompt_tokens=2000, completion_tokens=100, total_tokens=2100, cached_tokens=1500,
                        cost_usd=0.005)
    assert footer_parts(from_usage(usage)) == ["2.0k in / 100 out", "$0.0050", "cache 75%"]


def test_a_turn_without_reported_usage_says_so_instead_of_zero_tokens() -> None:
    assert footer_parts(from_usage(views.Usage())) == ["usage not reported"]


def test_dollars_keep_four_places_below_one_and_two_above() -> None:
    assert (usd(0.00042), usd(12.345)) == ("$0.0004", "$12.35")


def test_session_totals_count_the_cache_rate_over_the_steps_that_reported_one() -> None:
    totals = from_session({"promptTokens": 10_000, "completionTokens": 300, "cachedTokens": 3000,
                           "cacheReportedPromptTokens": 4000, "costUsd": 0.25})
    assert footer_parts(totals) == ["10.0k in / 300 out", "$0.2500", "cache 75%"]


def test_slash_cost_shows_the_turn_and_the_session_and_how_to_price_an_unpriced_model() -> None:
    turn = views.Usage(prompt_tokens=500, completion_tokens=20, total_tokens=520)
    budget = json.dumps({"usage": {"promptTokens": 900, "completionTokens": 40, "totalTokens": 940}, "turns": 2})
    lines = cost_report(turn, budget)
    assert lines[0].startswith("last turn") and "cost n/a · 500 in / 20 out · cache n/a" in lines[0]
    assert lines[1].startswith("session") and lines[1].endswith("900 in / 40 out · cache n/a · 2 turns")
    assert lines[2].strip() == NO_PRICE


def test_slash_cost_before_any_usage_says_not_reported() -> None:
    lines = cost_report(views.Usage(), json.dumps({"usage": {}, "turns": 1}))
    assert "usage not reported" in lines[0] and "usage not reported" in lines[1]
    assert len(lines) == 2
