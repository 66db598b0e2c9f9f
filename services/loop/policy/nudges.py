"""How a nudge the harness gives the model is shown to the user (pure)."""

from __future__ import annotations


def shown_nudge(nudge: str, limit: int = 160) -> str:
    """What the user sees of a nudge the harness gives the model ('[continue] Your last answer was
    cut off ...'): its first sentence, at most ``limit`` characters."""
    first = " ".join(nudge.split())
    end = first.find(". ")
    first = first[: end + 1] if end > 0 else first
    return first if len(first) <= limit else first[: limit - 1] + "…"
