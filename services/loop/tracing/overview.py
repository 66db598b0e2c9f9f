"""``ai-coding trace overview``: one row per traced session and a TOTAL row (pure).

Counts come from each session's ``summary.json``; a missing or corrupt one counts
as zero and the row says so, and a summary whose turn count disagrees with the turn
files on disk is marked, never an error. Age is the trace's own last timestamp.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from services.loop.tracing.report import Tokens
from services.loop.tracing.store import DAY_SECONDS, SessionRef


@dataclass(frozen=True)
class OverviewRow:
    session: str
    turns: int
    files: int
    steps: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    """None when no step reported cached tokens."""
    cost_usd: float | None
    """None unless prices are configured for the model."""
    age_seconds: float
    marks: list[str] = field(default_factory=list)
    egress_requests: int = 0
    """Requests of sandboxed commands through the egress proxy (``tools.sandbox.network: proxy``)."""
    egress_refused: int = 0
    egress_bytes: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        if self.cached_tokens is None or self.prompt_tokens <= 0:
            return None
        return self.cached_tokens / self.prompt_tokens

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "cache_hit_rate": self.cache_hit_rate}


def session_row(ref: SessionRef, now: float) -> OverviewRow:
    summary = ref.summary()
    marks = [f"summary.json {summary.problem}"] if summary.problem else []
    tokens, steps = Tokens(), 0
    egress = {"egress_requests": 0, "egress_refused": 0, "egress_bytes": 0}
    for entry in summary.turns:
        tokens = tokens.add(Tokens.from_usage(entry.get("usage")))
        steps += int(entry.get("iterations") or 0)
        for key in egress:
            egress[key] += int(entry.get(key) or 0)
    files = len(ref.turn_files)
    if not summary.problem and len(summary.turns) != files:
        marks.append(f"mismatch: summary has {len(summary.turns)} turns, {files} turn files on disk")
    return OverviewRow(ref.session_id, len(summary.turns), files, steps, tokens.prompt, tokens.completion,
                       tokens.cached, tokens.cost_usd, max(0.0, now - ref.last_activity), marks, **egress)


def overview(refs: list[SessionRef], now: float, since_days: float | None = None) -> list[OverviewRow]:
    """Rows of the sessions active within ``since_days`` (all when None), newest first."""
    if since_days is not None:
        refs = [r for r in refs if now - r.last_activity <= since_days * DAY_SECONDS]
    return [session_row(ref, now) for ref in refs]


def total(rows: list[OverviewRow]) -> OverviewRow:
    """The TOTAL row: sums; cached and cost stay None when no session reported them."""
    tokens = Tokens()
    for row in rows:
        tokens = tokens.add(Tokens(row.prompt_tokens, row.completion_tokens, row.cached_tokens, row.cost_usd))
    return OverviewRow("TOTAL", sum(r.turns for r in rows), sum(r.files for r in rows), sum(r.steps for r in rows),
                       tokens.prompt, tokens.completion, tokens.cached, tokens.cost_usd,
                       min((r.age_seconds for r in rows), default=0.0),
                       [f"{sum(1 for r in rows if r.marks)} sessions marked"] if any(r.marks for r in rows) else [],
                       sum(r.egress_requests for r in rows), sum(r.egress_refused for r in rows),
                       sum(r.egress_bytes for r in rows))
