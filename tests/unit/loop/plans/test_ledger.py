"""The uncertainty ledger: derived from recorded outcomes and proofs, changed only when its open set does."""

from __future__ import annotations

from services.loop.core.domain import ToolOutcome
from services.loop.policy.acceptance import GateFailure
from services.loop.turn.ledger import Ledger


def outcome(ok: bool, tool: str = "bash", code: str = "") -> ToolOutcome:
    return ToolOutcome("c", tool, ok, "", error_code=code)


def test_a_repeated_error_and_a_failure_streak_open_entries_and_a_success_closes_the_streak() -> None:
    ledger = Ledger()
    seen = [outcome(True)]
    assert ledger.update(seen) is None  # nothing in doubt: no event
    seen += [outcome(False, "read", "not_found"), outcome(False, "read", "not_found")]
    assert ledger.update(seen) == ["tool errors: read not_found x2"]
    assert ledger.update(seen) is None  # unchanged: no second event
    seen.append(outcome(False, "edit", "edit_no_match"))
    assert ledger.update(seen) == ["tool errors: read not_found x2", "failure streak: the last 3 calls failed"]
    seen.append(outcome(True))
    assert ledger.update(seen) == ["tool errors: read not_found x2"]


def test_a_failed_proof_stays_open_until_it_passes() -> None:
    ledger = Ledger()
    ledger.proofs([GateFailure("a1", "tests pass", "pytest -q", 1)], [])
    assert ledger.update([]) == ["verify failed: `pytest -q` (a1)"]
    ledger.proofs([], ["a1"])
    assert ledger.update([]) == []
