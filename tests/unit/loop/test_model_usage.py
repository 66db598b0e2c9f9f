from __future__ import annotations

import pytest

from services.loop.core.ports import Usage
from services.loop.model.usage import common_prefix_len, normalize_usage, prefix_ratio, step_cost


def test_openai_cached_and_reasoning_tokens_are_read() -> None:
    u = normalize_usage(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "total_tokens": 1050,
            "prompt_tokens_details": {"cached_tokens": 768},
            "completion_tokens_details": {"reasoning_tokens": 20},
        }
    )
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (1000, 50, 1050)
    assert u.cached_tokens == 768
    assert u.reasoning_tokens == 20
    assert u.cache_creation_tokens is None


def test_deepseek_cache_hit_tokens_become_cached_tokens() -> None:
    u = normalize_usage(
        {"prompt_tokens": 900, "completion_tokens": 9, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 260}
    )
    assert u.cached_tokens == 640
    assert u.total_tokens == 909


def test_anthropic_style_cache_read_and_creation_are_read_and_counted_in_the_prompt() -> None:
    u = normalize_usage(
        {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}
    )
    assert u.cached_tokens == 300
    assert u.cache_creation_tokens == 40
    assert u.prompt_tokens == 350
    assert u.total_tokens == 355


def test_a_provider_that_reports_no_cache_leaves_it_unknown_not_zero() -> None:
    u = normalize_usage({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
    assert u.cached_tokens is None
    assert u.reasoning_tokens is None


def test_a_zero_cache_hit_is_reported_as_zero() -> None:
    assert normalize_usage({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}).cached_tokens == 0


def test_missing_usage_is_all_zero_with_unknown_cache() -> None:
    assert normalize_usage(None) == Usage()


def test_cost_is_none_without_prices() -> None:
    u = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert step_cost(u, input_per_mtok=None, output_per_mtok=2.0) is None
    assert step_cost(u, input_per_mtok=1.0, output_per_mtok=None) is None


def test_cost_charges_cached_tokens_at_the_cached_price() -> None:
    u = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=400_000)
    cost = step_cost(u, input_per_mtok=1.0, output_per_mtok=2.0, cached_input_per_mtok=0.1)
    assert cost == pytest.approx(0.6 * 1.0 + 0.4 * 0.1 + 0.5 * 2.0)


def test_prefix_ratio_is_the_shared_prefix_share_of_the_new_request() -> None:
    assert prefix_ratio(b"abcdef", b"abcdXYZW") == pytest.approx(4 / 8)
    assert prefix_ratio(b"abc", b"abcdef") == pytest.approx(0.5)
    assert prefix_ratio(None, b"abc") is None
    assert prefix_ratio(b"abc", b"") is None


@pytest.mark.parametrize(("a", "b", "n"), [(b"", b"x", 0), (b"same", b"same", 4), (b"xa", b"ya", 0), (b"a" * 999 + b"b", b"a" * 1000, 999)])
def test_common_prefix_len_finds_the_first_difference(a: bytes, b: bytes, n: int) -> None:
    assert common_prefix_len(a, b) == n
