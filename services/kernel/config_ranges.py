"""The accepted range of every numeric config key, checked where the typed sections are read.

A value out of its range is refused with a sentence naming the key, the value and the range; the
section is read without it (the field keeps its default) and the sentence joins the config's
warnings, which OpenSession shows. A service therefore never crash-loops on configuration.

Keys not listed get the default rule: a finite number, 0 or more, at most ``HUGE`` (seconds: at
most a week; milliseconds: a week in ms). ``models.*`` and ``compaction.models.*`` match any model
name. Zero is allowed wherever the docstring gives it a meaning ("0 = off", "0 = no limit"); a lower
bound above 0 is there only where 0 would stop the component (a window of 0 tokens, 0 iterations).
"""

from __future__ import annotations

import math

from services.kernel.records import record

HUGE = 1_000_000_000
WEEK_SECONDS = 7 * 86_400.0


@record
class Range:
    """``low <= value <= high`` (``low`` excluded when ``above``)."""

    low: float = 0
    high: float = HUGE
    above: bool = False
    """True: the value must be more than ``low`` (0 would stop everything)."""

    def describe(self) -> str:
        low = ("a positive number" if self.low == 0 else f"more than {self.low:g}") if self.above \
            else f"at least {self.low:g}"
        return f"{low} and at most {self.high:g}"

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        return (value > self.low if self.above else value >= self.low) and value <= self.high


_SECONDS = Range(0, WEEK_SECONDS, above=True)
_COUNT = Range(1, 100_000)

RANGES: dict[str, Range] = {
    # ai: (services/loop/policy/settings.py)
    "ai.max_tool_iterations": _COUNT,
    "ai.max_auto_continuations": Range(0, 1000),
    "ai.turn_timeout_seconds": Range(0, WEEK_SECONDS),
    "ai.subagent_timeout_seconds": Range(0, WEEK_SECONDS),
    "ai.subagent_max_iterations": _COUNT,
    "ai.max_parallel_subagents": Range(1, 64),
    "ai.failed_streak_threshold": _COUNT,
    "ai.max_strategy_nudges": Range(0, 1000),
    "ai.stall_iterations": _COUNT,
    "ai.duplicate_call_threshold": Range(0, 1000),
    "ai.search_streak_threshold": Range(0, 1000),
    "ai.question_timeout_seconds": _SECONDS,
    "ai.plan_max_step_turns": Range(0, 1000),
    "ai.plan_item_wall_seconds": Range(0, WEEK_SECONDS),
    # compaction: (services/loop/compaction/settings.py)
    "compaction.context_window": Range(0, 100_000_000),
    "compaction.threshold": Range(0, 100_000_000, above=True),
    "compaction.target_fraction": Range(0, 0.99, above=True),
    "compaction.max_messages": Range(1, 1_000_000),
    "compaction.per_result_persist_bytes": Range(1, 100_000_000),
    "compaction.summary_timeout_seconds": _SECONDS,
    "compaction.breaker_failures": _COUNT,
    "compaction.working_memory_note_chars": Range(1, 100_000),
    "compaction.models.*.threshold": Range(0, 100_000_000, above=True),
    # models.<name>: (services/loop/model/settings.py)
    "models.*.max_tokens": Range(1, 10_000_000),
    "models.*.temperature": Range(0, 2),
    "models.*.step_timeout_seconds": _SECONDS,
    "models.*.stream_idle_seconds": _SECONDS,
    "models.*.max_retries": Range(0, 100),
    "models.*.retry_budget_seconds": Range(0, WEEK_SECONDS),
    "models.*.context_window": Range(1, 100_000_000),
    # loop: (services/loop/main.py)
    "loop.harvest_timeout_seconds": _SECONDS,
    "loop.event_window": Range(1, 10_000_000),
    # tracing.otlp: (services/loop/tracing/live.py)
    "tracing.otlp.timeout_seconds": Range(0, 3600, above=True),
    "tracing.otlp.max_queue_spans": Range(1, 10_000_000),
    "tracing.otlp.batch_delay_ms": Range(0, 3_600_000, above=True),
    # tools: (services/tools/config.py)
    "tools.idle_session_seconds": _SECONDS,
    # memory: (services/memory/settings.py)
    "memory.embeddings.min_cosine": Range(-1, 1),
    "memory.embeddings.timeout_seconds": _SECONDS,
    "memory.recall_timeout_seconds": Range(-WEEK_SECONDS, WEEK_SECONDS),
    "memory.min_relevance": Range(0, 1),
    "memory.relative_band": Range(0, 1),
    "memory.max_index_entries": Range(0, HUGE),
    "memory.default_k": Range(1, 1000),
    "memory.open_thread_ttl_days": Range(0, 36_500, above=True),
    "memory.rrf_k": Range(1, 100_000),
    "memory.busy_timeout_ms": Range(0, 3_600_000),
    # mcp.servers[<name>]: (services/mcp_gateway/settings.py; a bad entry fails that server alone)
    "mcp.servers[*].timeout.startup": Range(0, WEEK_SECONDS * 1000, above=True),
    "mcp.servers[*].timeout.catalog": Range(0, WEEK_SECONDS * 1000, above=True),
    "mcp.servers[*].timeout.execution": Range(0, WEEK_SECONDS * 1000, above=True),
    "mcp.servers[*].oauth.callback_port": Range(0, 65_535),
    # supervisor: (clients/cli/supervisor_config.py)
    "supervisor.grace_seconds": _SECONDS,
    "supervisor.backoff_initial_seconds": Range(0, 3600, above=True),
    "supervisor.backoff_max_seconds": Range(0, 86_400, above=True),
    "supervisor.stable_seconds": _SECONDS,
}


def _pattern(key: str) -> str:
    if key.startswith("mcp.servers[") and "]" in key:
        return "mcp.servers[*]" + key[key.index("]") + 1 :]
    parts = key.split(".")
    if parts[0] == "models" and len(parts) == 3:
        return f"models.*.{parts[2]}"
    if parts[:2] == ["compaction", "models"] and len(parts) == 4:
        return f"compaction.models.*.{parts[3]}"
    return key


def range_for(key: str) -> Range:
    """The accepted range of numeric config key ``key`` (dotted, as the user writes it)."""
    found = RANGES.get(_pattern(key))
    if found is not None:
        return found
    if key.endswith("_seconds"):
        return Range(0, WEEK_SECONDS)
    if key.endswith("_ms"):
        return Range(0, WEEK_SECONDS * 1000)
    return Range(0, HUGE)


def range_problem(key: str, value: float) -> str | None:
    """Why ``value`` cannot be used for ``key`` (a sentence naming both), or None when it can."""
    accepted = range_for(key)
    if accepted.holds(value):
        return None
    return f"config key `{key}` is {value!r}, out of range: it must be {accepted.describe()}"


__all__ = ["HUGE", "RANGES", "Range", "range_for", "range_problem"]
