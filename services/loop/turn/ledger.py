"""The uncertainty ledger: what the recorded evidence of a turn leaves in doubt, derived purely.

Three kinds of entry, each from facts the turn recorded (never from the model's words):
a proof that failed and has not passed since (``verify failed``), the same tool failing with
the same error code at least ``CLUSTER`` times (``tool errors``), and the latest ``STREAK``
or more calls in a row failing (``failure streak``). The turn emits ``LedgerUpdated`` when
the open set changes; clients show a dim line. It is never a nudge: the turn policy does not
read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from services.loop.core.domain import ToolOutcome
from services.loop.policy.acceptance import GateFailure

CLUSTER = 2
"""Failures of one (tool, error code) that make a cluster."""
STREAK = 3
"""Calls failing in a row that make a streak."""


def open_entries(clusters: Counter[tuple[str, str]], streak: int, failing_proofs: Iterable[GateFailure]) -> list[str]:
    """The ledger's open set, in a stable order, from the counts the ledger keeps."""
    entries = [f"verify failed: `{f.command}` ({f.item_id})" for f in failing_proofs]
    entries += [f"tool errors: {tool} {code} x{n}" for (tool, code), n in sorted(clusters.items()) if n >= CLUSTER]
    if streak >= STREAK:
        entries.append(f"failure streak: the last {streak} calls failed")
    return entries


class Ledger:
    """One turn's ledger: says when its open set changed. It reads the turn's outcomes once each
    (a cursor), so a long turn's per-step cost does not grow with it."""

    def __init__(self) -> None:
        self.open: list[str] = []
        self._failing: dict[str, GateFailure] = {}
        self._clusters: Counter[tuple[str, str]] = Counter()
        self._streak = 0
        self._seen = 0

    def proofs(self, failed: Iterable[GateFailure], passed: Iterable[str]) -> None:
        """Record a gate check: these failed, these item ids passed (closing their entries)."""
        for item_id in passed:
            self._failing.pop(item_id, None)
        for failure in failed:
            self._failing[failure.item_id] = failure

    def update(self, outcomes: Sequence[ToolOutcome]) -> list[str] | None:
        """The new open set when it changed since the last update, else None (``outcomes``: the turn's
        outcomes so far, in order; only those not seen before are read)."""
        for outcome in outcomes[self._seen:]:
            if outcome.ok:
                self._streak = 0
            else:
                self._streak += 1
                self._clusters[(outcome.tool, outcome.error_code or "error")] += 1
        self._seen = len(outcomes)
        entries = open_entries(self._clusters, self._streak, self._failing.values())
        if entries == self.open:
            return None
        self.open = entries
        return entries
