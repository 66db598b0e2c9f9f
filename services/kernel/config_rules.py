"""What a project layer may do with each key the configuration knows: one declared rule per key.

The user config is the user's word; a project file (``ai-coding.yaml``, ``ai-coding.local.yaml``) may
be the agent's. Every key the schema knows has a rule here, and tests/unit/kernel/test_kernel_config_rules.py
fails when one has none, so the next key added cannot loosen a limit by default:

- ``EXECUTION``  runs a program, sends data or a key to an endpoint, or decides what is executed: a
  project's value is used only item by item as the user approved it for the workspace
  (services/kernel/trust.py);
- ``USER_ONLY``  never from a project, approved or not (which code the services load, where they
  listen, the sandbox, the tool service's roots);
- ``UNION``      a list a project may only add to (deny and confirm lists);
- ``TRUE_WINS``  a project may turn it on, not off (``strict_paths``, ``subagent_isolation``);
- ``FALSE_WINS`` a project may turn it off, not on (features that reach further);
- ``LOWER``      a limit a project may only lower, never raise or switch off with 0; the ceiling is the
  user's value, else the default in ``LOWER_DEFAULTS`` (pinned to the readers' defaults by the test);
- ``HARMLESS``   behaviour a project may set freely (heuristics, output sizes, a model's temperature).

Patterns are dotted paths, ``*`` = any one key; the most specific matching pattern is the key's rule.
Only the ``WHOLE_SECTIONS`` patterns rule what is below them (``hooks`` covers ``hooks.events``);
every other key is declared on its own.
"""

from __future__ import annotations

from enum import StrEnum


class Rule(StrEnum):
    EXECUTION = "execution"
    USER_ONLY = "user_only"
    UNION = "union"
    TRUE_WINS = "true_wins"
    FALSE_WINS = "false_wins"
    LOWER = "lower"
    HARMLESS = "harmless"


E, U, UNION, ON, OFF, LOW, OK = (Rule.EXECUTION, Rule.USER_ONLY, Rule.UNION, Rule.TRUE_WINS, Rule.FALSE_WINS,
                                 Rule.LOWER, Rule.HARMLESS)

RULES: dict[str, Rule] = {
    # which code runs, where the services listen, the sandbox (whole sections)
    "hooks": E, "hooks.plugin_dir": U, "mcp": E, "endpoints": U, "supervisor": U, "net": U,
    "tools.sandbox": U, "tools.checkpoints": U, "tools.extra_workspace_roots": U, "tools.idle_session_seconds": U,
    "skills": U, "subagents": U, "traces": U, "tracing.dir": E, "tracing.otlp": E,
    "plans.acceptance": E, "plans.*": U,
    # models: a project may tune an entry the user has, never point it elsewhere or add one
    "default_model": OK, "models.*.*": U,
    "models.*.base_url": E, "models.*.api_key": E, "models.*.provider": E,
    **{f"models.*.{k}": OK for k in ("model", "max_tokens", "temperature", "price_input_per_mtok",
                                      "price_cached_input_per_mtok", "price_output_per_mtok", "step_timeout_seconds",
                                      "max_retries", "retry_budget_seconds", "context_window", "images")},
    # the loop's limits and safety settings
    "ai.max_tool_iterations": LOW, "ai.max_auto_continuations": LOW, "ai.turn_timeout_seconds": LOW,
    "ai.turn_token_budget": LOW, "ai.subagent_timeout_seconds": LOW, "ai.subagent_max_iterations": LOW,
    "ai.subagent_token_budget": LOW, "ai.max_parallel_subagents": LOW, "ai.subagent_isolation": ON,
    "ai.duplicate_call_threshold": LOW, "ai.plan_max_step_turns": LOW, "ai.plan_item_wall_seconds": LOW,
    "ai.strict_paths": ON, "ai.enforce_dependencies": ON,
    "ai.bash_policy.deny": UNION, "ai.bash_policy.confirm": UNION,
    "ai.static_check": E, "ai.websearch_api_key": E,
    **{f"ai.{k}": OK for k in ("failed_streak_threshold", "max_strategy_nudges", "stall_iterations",
                                "search_streak_threshold", "search_streak_l2", "search_streak_l3", "stale_streak_l1",
                                "stale_streak_l2", "stale_streak_l3", "repeated_nonempty_l3",
                                "question_timeout_seconds")},
    "loop.memory": OFF, "loop.mcp": OFF, "loop.traces": ON, "loop.harvest": OFF,
    "loop.harvest_timeout_seconds": LOW, "loop.event_window": OK,
    "sessions.fsync": ON,
    "compaction.enabled": OFF,
    **{f"compaction.{k}": OK for k in (
        "context_window", "threshold", "output_reserve", "models", "target_fraction", "keep_recent_tool_results",
        "keep_recent_tool_tokens", "l2_window_chars", "l2_window_budget", "max_messages", "snip_keep_head",
        "snip_keep_tail", "per_result_persist_bytes", "summary_delta_tokens", "summary_timeout_seconds",
        "breaker_failures", "working_memory_keep", "working_memory_note_chars")},
    "memory.enabled": OFF, "memory.extraction_enabled": OFF, "memory.embeddings.enabled": OFF,
    "memory.embeddings.base_url": E, "memory.embeddings.api_key_env": E,
    **{f"memory.{k}": OK for k in (
        "extraction_extractors", "recall_timeout_seconds", "min_relevance", "relative_band", "max_index_entries",
        "constraints_max_chars", "default_k", "open_thread_ttl_days", "embeddings.model", "embeddings.min_cosine",
        "embeddings.timeout_seconds", "recall_fusion", "rrf_k", "busy_timeout_ms")},
}
WHOLE_SECTIONS = frozenset({"hooks", "mcp", "endpoints", "supervisor", "net", "tools.sandbox", "tools.checkpoints", "skills", "subagents", "traces",
                            "tracing.otlp", "ai.static_check", "plans.*", "models.*.*"})
"""Patterns that rule everything below them (each user-only or an execution item as a whole)."""

LOWER_DEFAULTS: dict[str, float] = {
    "ai.max_tool_iterations": 50, "ai.max_auto_continuations": 3, "ai.turn_timeout_seconds": 1800.0,
    "ai.turn_token_budget": 0, "ai.subagent_timeout_seconds": 600.0, "ai.subagent_max_iterations": 30,
    "ai.subagent_token_budget": 0, "ai.max_parallel_subagents": 4, "ai.duplicate_call_threshold": 2,
    "ai.plan_max_step_turns": 0, "ai.plan_item_wall_seconds": 900.0, "loop.harvest_timeout_seconds": 60.0,
}
"""The ceiling of each ``LOWER`` key when the user config does not set it (0 = no limit)."""

_TIGHTENING = (Rule.UNION, Rule.TRUE_WINS, Rule.FALSE_WINS, Rule.LOWER)


def _matches(path: tuple[str, ...], pattern: str) -> bool:
    parts = pattern.split(".")
    return len(parts) <= len(path) and all(p in ("*", k) for p, k in zip(parts, path, strict=False))


def _specificity(pattern: str) -> tuple[int, int]:
    parts = pattern.split(".")
    return len(parts), sum(p != "*" for p in parts)


def declared(path: tuple[str, ...]) -> tuple[str, Rule] | None:
    """The most specific pattern covering ``path`` (longest, then most literal) and its rule."""
    best: tuple[str, Rule] | None = None
    for pattern, rule in RULES.items():
        if _matches(path, pattern) and (best is None or _specificity(pattern) > _specificity(best[0])):
            best = (pattern, rule)
    return best


def rule_for(path: tuple[str, ...]) -> Rule | None:
    found = declared(path)
    return found[1] if found else None


def exact(path: tuple[str, ...], rule: Rule) -> bool:
    """Whether a pattern with exactly ``path``'s length declares ``rule`` for it (where a walk stops)."""
    found = declared(path)
    return found is not None and found[1] is rule and len(found[0].split(".")) == len(path)


def keys_with(*rules: Rule) -> tuple[str, ...]:
    return tuple(p for p, r in RULES.items() if r in rules)


def tighten_rules() -> tuple[tuple[str, str], ...]:
    """The (pattern, rule name) pairs of the tightening rules, as the loader applies them."""
    return tuple((p, r.value) for p, r in RULES.items() if r in _TIGHTENING)


def model_behaviour_keys() -> frozenset[str]:
    return frozenset(p.split(".")[2] for p, r in RULES.items() if p.startswith("models.*.") and r is Rule.HARMLESS)
