"""E2E fixtures: which branches of the turn policy the end-to-end tests reach."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.loop.plans import runner
from services.loop.policy.turn import Decision, Facts, decide
from services.loop.turn import pipeline

REACHED: set[str] = set()
"""``Decision.rule`` of every decide() answer given to a turn during this run (the loop runs in
process in the LoopStack tests; test_zz_decide_branches.py reads this)."""


@pytest.fixture(autouse=True, scope="session")
def _record_decide_rules() -> Iterator[None]:
    def recording(facts: Facts) -> Decision:
        decision = decide(facts)
        REACHED.add(decision.rule)
        return decision

    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "decide", recording)
    patch.setattr(runner, "decide", recording)  # a /plan run's end
    yield
    patch.undo()
