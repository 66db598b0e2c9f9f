"""Usage normalization: read whatever the provider reported, never guess.

Known shapes (tried in turn, no provider table needed):

- OpenAI: ``prompt_tokens_details.cached_tokens``,
  ``completion_tokens_details.reasoning_tokens``;
- DeepSeek: ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``;
- Anthropic-style: ``cache_read_input_tokens``, ``cache_creation_input_tokens``
  (and ``input_tokens`` / ``output_tokens`` for the totals).

A field nobody reported stays ``None``. Cost exists only when prices are set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.loop.core.ports import Usage


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _sub(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    got = raw.get(key)
    return got if isinstance(got, Mapping) else {}


def _first(*values: int | None) -> int | None:
    for v in values:
        if v is not None:
            return v
    return None


def normalize_usage(raw: Mapping[str, Any] | None) -> Usage:
    """A :class:`Usage` from one provider usage object (a plain dict)."""
    if not raw:
        return Usage()
    prompt_details = _sub(raw, "prompt_tokens_details")
    completion_details = _sub(raw, "completion_tokens_details")
    prompt = _first(_int(raw.get("prompt_tokens")), _int(raw.get("input_tokens")))
    completion = _first(_int(raw.get("completion_tokens")), _int(raw.get("output_tokens")))
    cache_read = _int(raw.get("cache_read_input_tokens"))
    cache_creation = _int(raw.get("cache_creation_input_tokens"))
    if prompt is not None and raw.get("prompt_tokens") is None and (cache_read or cache_creation):
        # Anthropic counts cached input outside input_tokens; fold it in so
        # prompt_tokens means "everything the model read" for every provider.
        prompt += (cache_read or 0) + (cache_creation or 0)
    cached = _first(
        _int(prompt_details.get("cached_tokens")),
        _int(raw.get("prompt_cache_hit_tokens")),
        cache_read,
    )
    total = _first(_int(raw.get("total_tokens")))
    if total is None and (prompt is not None or completion is not None):
        total = (prompt or 0) + (completion or 0)
    return Usage(
        prompt_tokens=prompt or 0,
        completion_tokens=completion or 0,
        total_tokens=total or 0,
        cached_tokens=cached,
        cache_creation_tokens=cache_creation,
        reasoning_tokens=_int(completion_details.get("reasoning_tokens")),
    )


def step_cost(
    usage: Usage,
    *,
    input_per_mtok: float | None,
    output_per_mtok: float | None,
    cached_input_per_mtok: float | None = None,
) -> float | None:
    """USD for one step, or None when the input or output price is not configured."""
    if input_per_mtok is None or output_per_mtok is None:
        return None
    cached = usage.cached_tokens or 0
    cached_price = input_per_mtok if cached_input_per_mtok is None else cached_input_per_mtok
    uncached = max(usage.prompt_tokens - cached, 0)
    return (uncached * input_per_mtok + cached * cached_price + usage.completion_tokens * output_per_mtok) / 1e6


_BLOCK = 1 << 16


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``.

    Compares 64 KiB blocks, then bisects the first differing one. Byte slices
    compare with memcmp; memoryview equality goes element by element and was
    12x slower (85 ms vs 7 ms for a 10 MB request differing at 9 MB, on this
    2-core machine).
    """
    n = min(len(a), len(b))
    start = 0
    while start < n:
        end = min(start + _BLOCK, n)
        if a[start:end] != b[start:end]:
            lo, hi = start, end  # invariant: a[start:lo] == b[start:lo] and a[start:hi] != b[start:hi]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[start:mid] == b[start:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        start = end
    return n


def prefix_ratio(prev_request: bytes | None, this_request: bytes) -> float | None:
    """Share of ``this_request`` that repeats the previous request's prefix.

    The fallback cache measure when the endpoint reports no cached tokens;
    None for the first request of a session or an empty request.
    """
    if prev_request is None or not this_request:
        return None
    return common_prefix_len(prev_request, this_request) / len(this_request)
