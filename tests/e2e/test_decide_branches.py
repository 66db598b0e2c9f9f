"""Every branch of the turn policy is reached by at least one end-to-end test (marked to run after the others)."""

from __future__ import annotations

import pytest

from services.loop.policy.turn import RULES
from tests.e2e.conftest import REACHED

# The e2e modules whose turns reach the branches; the check needs all of them in this run.
NEEDED = ("test_loop_turns.py", "test_loop_control.py")


@pytest.mark.runs_last
def test_every_branch_of_decide_is_reached_by_an_e2e_test(request: pytest.FixtureRequest) -> None:
    ran = {item.path.name for item in request.session.items}
    if not all(name in ran for name in NEEDED):
        pytest.skip(f"needs {', '.join(NEEDED)} in the same run (run tests/e2e as a whole)")
    missing = [rule for rule in RULES if rule not in REACHED]
    assert not missing, f"no e2e test reaches decide() branch(es) {missing}; add a turn that does"
