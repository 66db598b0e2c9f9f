"""What the turn and the session cost: tokens, cache hit rate and USD, as the footer and ``/cost`` show them.

Pure functions over the provider's reported usage (``views.Usage`` for a turn, the session's
persisted totals for the session). Nothing is guessed: a provider that reported no usage is
"usage not reported", a model without a price has tokens but no dollar figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from clients.cli import views

NOT_REPORTED = "usage not reported"
NO_PRICE = ("no price for this model: set price_input_per_mtok and price_output_per_mtok in its models: entry "
            "(the shipped prices cover the common models)")


def human_count(n: float) -> str:
    """1234 -> '1.2k', 999 -> '999', 2500000 -> '2.5M'."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(int(n))


def usd(amount: float) -> str:
    """'$0.0123' below a dollar (4 places: a step often costs a tenth of a cent), '$1.23' above."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


@dataclass(frozen=True)
class Totals:
    """Token totals of a turn or a session; ``cached`` and ``cost_usd`` None where nobody reported one."""

    prompt: int = 0
    completion: int = 0
    cached: int | None = None
    cache_base: int = 0
    """The prompt tokens of the steps that reported a cache figure (the hit rate's denominator)."""
    cost_usd: float | None = None
    prefix_ratio: float | None = None

    @property
    def reported(self) -> bool:
        """The provider said something about usage (a turn of zero tokens did not happen)."""
        return self.prompt > 0 or self.completion > 0


def from_usage(usage: views.Usage) -> Totals:
    """A turn's totals from its ``TurnFinished.usage``."""
    return Totals(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                  usage.prompt_tokens if usage.cached_tokens is not None else 0, usage.cost_usd, usage.prefix_ratio)


def from_session(usage: dict[str, Any]) -> Totals:
    """A session's totals from its persisted usage (``/budget``'s data: promptTokens, costUsd, ...)."""
    cached = usage.get("cachedTokens")
    cost = usage.get("costUsd")
    return Totals(int(usage.get("promptTokens", 0) or 0), int(usage.get("completionTokens", 0) or 0),
                  int(cached) if cached is not None else None, int(usage.get("cacheReportedPromptTokens", 0) or 0),
                  float(cost) if cost is not None else None)


def cache_rate(t: Totals) -> str:
    """Cache hit as the provider reported it, else the prefix ratio ('~'), else 'n/a'."""
    if t.cached is not None and t.cache_base > 0:
        return f"{100 * t.cached / t.cache_base:.0f}%"
    if t.prefix_ratio is not None:
        return f"~{100 * t.prefix_ratio:.0f}%"
    return "n/a"


def footer_parts(t: Totals) -> list[str]:
    """The footer's usage parts: '1.2k in / 56 out', '$0.0031' (when priced), 'cache 80%';
    one 'usage not reported' part when the provider gave none."""
    if not t.reported:
        return [NOT_REPORTED]
    parts = [f"{human_count(t.prompt)} in / {human_count(t.completion)} out"]
    if t.cost_usd is not None:
        parts.append(usd(t.cost_usd))
    parts.append(f"cache {cache_rate(t)}")
    return parts


def cost_line(label: str, t: Totals) -> str:
    """One /cost row: 'this turn     $0.0031 · 1.2k in / 56 out · cache 80%'."""
    if not t.reported:
        return f"{label:<13} {NOT_REPORTED} (the provider sent no token counts)"
    money = usd(t.cost_usd) if t.cost_usd is not None else "cost n/a"
    return f"{label:<13} {money} · {human_count(t.prompt)} in / {human_count(t.completion)} out · cache {cache_rate(t)}"


def cost_report(turn: views.Usage | None, budget_data_json: str) -> list[str]:
    """What ``/cost`` prints: the last turn's row, the session's row (from the loop's persisted
    totals), and how to get a dollar figure when there is none."""
    try:
        data = json.loads(budget_data_json or "{}")
    except ValueError:
        data = {}
    session = from_session(data.get("usage") or {}) if isinstance(data, dict) else Totals()
    turns = int(data.get("turns", 0) or 0) if isinstance(data, dict) else 0
    lines = [cost_line("last turn", from_usage(turn)) if turn is not None else f"{'last turn':<13} no turn yet"]
    lines.append(cost_line("session", session) + (f" · {turns} turn{'s' if turns != 1 else ''}" if turns else ""))
    priced = [t for t in ((from_usage(turn) if turn else None), session) if t is not None and t.reported]
    if priced and all(t.cost_usd is None for t in priced):
        lines.append(f"  {NO_PRICE}")
    return lines
