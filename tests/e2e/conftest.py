"""E2E fixtures: which branches of the turn policy the end-to-end tests reach, and that every
request offers the tools its system message and earlier tool results name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.fake_model.server import FakeModelServer, RecordedRequest
from services.loop.plans import runner
from services.loop.policy.turn import Decision, Facts, decide
from services.loop.turn import pipeline
from tests.support import run_checks

_IN_AN_E2E_TEST = [False]


@pytest.fixture(autouse=True, scope="session")
def _record_decide_rules() -> Iterator[None]:
    """Records the ``Decision.rule`` of every decide() answer given to a turn of an e2e test (the loop
    runs in process in the LoopStack tests): tests/support/run_checks.py checks after the run that
    every rule was reached. Only e2e tests count, whatever runs after them in the same process."""

    def recording(facts: Facts) -> Decision:
        decision = decide(facts)
        if _IN_AN_E2E_TEST[0]:
            run_checks.record("decide.rule", decision.rule)
        return decision

    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "decide", recording)
    patch.setattr(runner, "decide", recording)  # a /plan run's end
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _an_e2e_test_runs(_record_decide_rules: None) -> Iterator[None]:
    _IN_AN_E2E_TEST[0] = True
    yield
    _IN_AN_E2E_TEST[0] = False


SEEN: list[RecordedRequest] = []
"""Every request any in-process fake model received during this run, in arrival order."""


@pytest.fixture(autouse=True, scope="session")
def _record_requests() -> Iterator[None]:
    original = FakeModelServer._record

    def recording(self: FakeModelServer, record: RecordedRequest) -> None:
        SEEN.append(record)
        original(self, record)

    patch = pytest.MonkeyPatch()
    patch.setattr(FakeModelServer, "_record", recording)
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _named_tools_are_offered() -> Iterator[None]:
    """Fails a test whose model was told to call a tool its request did not offer."""
    from tests.support.tool_mentions import missing_tools

    start = len(SEEN)
    yield
    problems = []
    for record in SEEN[start:]:
        if record.path.rstrip("/").endswith("/chat/completions") and isinstance(record.body, dict):
            gaps = missing_tools(record.body)
            problems += [f"request {record.path} ({where}) names {sorted(names)} but offers none of them"
                         for where, names in gaps.items()]
    if problems:
        pytest.fail("tools named but not offered:\n" + "\n".join(sorted(set(problems))), pytrace=False)
