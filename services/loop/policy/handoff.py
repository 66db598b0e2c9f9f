"""The harness-written handoff report for a turn that ended early without model text.

Written only from recorded facts (goal, todo items, the last failed call, the
files changed), so it never claims more than happened. The pipeline returns
``text or handoff``; ``text`` keeps meaning "what the model said".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.loop.policy.turn import Status

TITLES = {
    Status.MAX_ITERATIONS: "iteration budget used up",
    Status.BUDGET: "token budget used up",
    Status.TIMEOUT: "turn clock expired",
    Status.FAILED: "engine error",
}
NO_PROGRESS = "no progress (early finish)"


@dataclass
class HandoffFacts:
    """What the report is written from."""

    status: Status
    reason: str = ""
    goal: str = ""
    done: list[str] = field(default_factory=list)
    not_done: list[str] = field(default_factory=list)
    last_failure: str = ""
    artifacts: list[str] = field(default_factory=list)
    iterations: int = 0
    trace_path: str = ""


def _bullets(items: list[str], empty: str, limit: int = 12) -> list[str]:
    if not items:
        return [f"- {empty}"]
    shown = [f"- {item}" for item in items[:limit]]
    if len(items) > limit:
        shown.append(f"- ... and {len(items) - limit} more")
    return shown


def handoff_report(f: HandoffFacts) -> str:
    """A short Markdown report: title, goal, done, not done, last failure, artifacts."""
    if f.reason in (NO_PROGRESS, "search unconverged"):
        title = f.reason
    else:
        title = TITLES.get(f.status, f.status.value)
    goal = " ".join(f.goal.split())
    lines = [f"## Handoff: {title}", ""]
    if f.reason and f.reason != title:
        lines.append(f"Stopped because: {f.reason}.")
    lines.append(f"Goal: {goal[:300] + ('...' if len(goal) > 300 else '') if goal else '(not recorded)'}")
    lines.append(f"Model steps: {f.iterations}")
    lines += ["", "Done:", *_bullets(f.done, "nothing recorded as done")]
    lines += ["", "Not done:", *_bullets(f.not_done, "no open items recorded")]
    lines += ["", f"Last failure: {f.last_failure or 'none'}"]
    lines += ["", "Artifacts:", *_bullets(f.artifacts, "no files changed")]
    if f.trace_path:
        lines += ["", f"Trace: {f.trace_path}"]
    return "\n".join(lines)
