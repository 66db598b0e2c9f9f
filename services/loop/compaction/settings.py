"""``CompactionSettings`` (config section ``compaction``) and the token budget they give a model."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.kernel.config import Config

# When neither the model entry nor the settings name a context window.
DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_OUTPUT_RESERVE = 20_000


@dataclass
class CompactionSettings:
    """When and how a session's history is compacted (config section ``compaction``)."""

    enabled: bool = True
    """Compact at all. Off: a long session ends on the provider's context_length error."""
    context_window: int = 0
    """Context size in tokens for models whose entry has no ``context_window``; 0 = 128000."""
    threshold: float = 0.8
    """When to compact: a fraction of the window (0 < x <= 1) or absolute tokens (> 1).
    Never above the window minus the output reserve."""
    output_reserve: int = 0
    """Tokens kept free for the reply; 0 = min(20000, the model's max_tokens), at most half the window."""
    models: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per model entry overrides of ``threshold`` / ``output_reserve``, e.g. ``{fast: {threshold: 0.6}}``."""
    target_fraction: float = 0.5
    """After a compaction the request aims at this fraction of the ceiling (room to grow before the next)."""
    keep_recent_tool_results: int = 3
    """L2: the newest tool results kept verbatim; older ones become envelopes."""
    keep_recent_tool_tokens: int = 0
    """L2: those newest results are also at most this many tokens together (the newest one always);
    0 = a twentieth of the window (6,400 tokens of 128,000: a few file reads; a tenth sent 2.3 MB over
    the 30-step bench of 20 KB outputs, a twentieth 1.50 MB). Older verbatim tool output beyond this
    much is enveloped at the next step (an L2-only compaction, no model call) instead of riding
    along until the ceiling; history_search still finds it."""
    l2_window_chars: int = 300
    """L2: characters of an envelope's head window and of its tail window."""
    l2_window_budget: int = 6000
    """L2: all envelope windows together, allocated newest first; past it envelopes keep only the path."""
    max_messages: int = 400
    """L1: past this many messages in view (and no checkpoint yet) the middle is snipped."""
    snip_keep_head: int = 4
    """L1: messages kept at the start."""
    snip_keep_tail: int = 200
    """L1: messages kept at the end."""
    per_result_persist_bytes: int = 30_000
    """L3: a result of the trailing tool batch above this size goes to transcripts/persisted/ (when the
    batch is over half the window)."""
    summary_delta_tokens: int = 0
    """L4: skip the summary while the new part is under this; 0 = 2% of the window, at least 1000."""
    summary_timeout_seconds: float = 90.0
    """L4: time budget of one summary (all its chunks); past it the step goes on without one."""
    breaker_failures: int = 3
    """L4: failed summaries in a row after which the session stops asking (fallback trim only)."""
    working_memory_keep: int = 12
    """Turn digests kept in the working-memory ring (injected only on turns that compacted)."""
    working_memory_note_chars: int = 120
    """The longest note ``checkpoint_write`` keeps."""


def compaction_settings(config: Config) -> CompactionSettings:
    """The typed ``compaction`` section. A bad value (wrong type, out of range, inconsistent with
    another) is left out with a warning naming the key (``config.warnings``): never a start failure."""
    settings = config.section(CompactionSettings, "compaction")
    problems = check(settings)
    for key, message in problems:
        if key == "models":
            settings.models = {n: e for n, e in settings.models.items() if not set(e) - _MODEL_KEYS}
        for name in ("max_messages", "snip_keep_head", "snip_keep_tail") if key == "max_messages" else (key,):
            if name != "models":
                setattr(settings, name, getattr(CompactionSettings(), name))
        warning = f"{message}; it is ignored (the default applies)"
        if warning not in config.warnings:
            config.warnings.append(warning)
    return settings


_MODEL_KEYS = {"threshold", "output_reserve"}


def check(s: CompactionSettings) -> list[tuple[str, str]]:
    """(field, sentence naming the key) for values that would make compaction fire never or always."""
    out: list[tuple[str, str]] = []
    if s.threshold <= 0:
        out.append(("threshold", f"config key `compaction.threshold` must be > 0, got {s.threshold}"))
    if not 0 < s.target_fraction < 1:
        out.append(("target_fraction",
                    f"config key `compaction.target_fraction` must be between 0 and 1, got {s.target_fraction}"))
    for key in ("keep_recent_tool_results", "keep_recent_tool_tokens", "l2_window_chars", "l2_window_budget",
                "snip_keep_head", "snip_keep_tail", "output_reserve", "summary_delta_tokens", "working_memory_keep"):
        if getattr(s, key, 0) < 0:
            out.append((key, f"config key `compaction.{key}` must be 0 or more, got {getattr(s, key)}"))
    if s.max_messages < s.snip_keep_head + s.snip_keep_tail + 1:
        out.append(("max_messages", f"config key `compaction.max_messages` ({s.max_messages}) must exceed "
                                    f"snip_keep_head + snip_keep_tail ({s.snip_keep_head + s.snip_keep_tail})"))
    for name, entry in s.models.items():
        unknown = set(entry) - _MODEL_KEYS
        if unknown:
            out.append(("models", f"config key `compaction.models.{name}` has unknown key(s) {sorted(unknown)} "
                                  "(per model you can set threshold and output_reserve)"))
    return out


@dataclass(frozen=True)
class Budget:
    """Token figures of one model: when to compact and how far."""

    window: int
    """The context window."""
    reserve: int
    """Kept free for the reply."""
    ceiling: int
    """A request estimated at or above this is compacted first."""
    target: int
    """What a compaction aims at."""
    summary_delta: int
    """L4 does not run for a new part smaller than this."""
    recent_tools: int = 0
    """L2: tokens of the newest tool results kept verbatim (see ``keep_recent_tool_tokens``)."""


def budget_for(s: CompactionSettings, model_entry: str, context_window: int | None,
               max_output: int | None) -> Budget:
    """The budget of a model: ``context_window`` / ``max_output`` from its entry when known."""
    window = context_window or s.context_window or DEFAULT_CONTEXT_WINDOW
    override = s.models.get(model_entry, {})
    reserve = int(override.get("output_reserve", s.output_reserve)) or min(
        DEFAULT_OUTPUT_RESERVE, max_output or DEFAULT_OUTPUT_RESERVE)
    reserve = min(reserve, window // 2)
    threshold = float(override.get("threshold", s.threshold))
    wanted = int(window * threshold) if threshold <= 1 else int(threshold)
    ceiling = max(min(wanted, window - reserve), 1)
    delta = s.summary_delta_tokens or max(window * 2 // 100, 1000)
    return Budget(window=window, reserve=reserve, ceiling=ceiling, target=int(ceiling * s.target_fraction),
                  summary_delta=delta, recent_tools=s.keep_recent_tool_tokens or window // 20)
