"""Checks over what the whole run saw, judged once after the last test, whatever order the tests ran
in and however many pytest-xdist workers ran them.

Tests and fixtures ``record(kind, value)`` facts in their own process; each xdist worker sends its
facts to the controller when it finishes, and the reporting process (the controller, or the only
process without xdist) judges every ``RunCheck`` whose test files were all in the run. The verdict
is reported like a test (a dot or an F, the short summary, the junit xml, the exit code), under the
node id ``run::<name>``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

FACTS: defaultdict[str, set[str]] = defaultdict(set)
"""What this process saw, by kind (``"files"``: the test files collected into the run, relative to the
repository)."""


def record(kind: str, value: str) -> None:
    """Remember ``value`` under ``kind`` for the run-wide checks."""
    FACTS[kind].add(value)


@dataclass(frozen=True)
class RunCheck:
    name: str
    folder: str
    """The tests that produce the facts: judged only when every test file under it is in the run."""
    problem: Callable[[dict[str, set[str]]], str]
    """The failure message for the run's facts, or "" when the check holds."""


def _decide_branches(facts: dict[str, set[str]]) -> str:
    from services.loop.policy.turn import RULES

    missing = [rule for rule in RULES if rule not in facts.get("decide.rule", set())]
    return f"no e2e test reaches decide() branch(es) {missing}; add a turn that does" if missing else ""


CHECKS = [
    # tests/e2e/conftest.py records the rule of every decide() answer an in-process loop gave.
    RunCheck("every_branch_of_decide_is_reached_by_an_e2e_test", "tests/e2e", _decide_branches),
]


class _Judge:
    """Registered by tests/conftest.py in every pytest process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.merged: defaultdict[str, set[str]] = defaultdict(set)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:  # after -k / -m deselection
            if item.path.is_relative_to(ROOT):
                record("files", item.path.relative_to(ROOT).as_posix())

    def merge(self, facts: dict[str, list[str]]) -> None:
        for kind, values in facts.items():
            self.merged[kind].update(values)

    # tryfirst: the verdicts must reach the junit xml and the summary, both written at session finish.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput: dict[str, Any] | None = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller judges
            workeroutput["run_facts"] = {kind: sorted(values) for kind, values in FACTS.items()}
            return
        if session.shouldstop or session.shouldfail:
            return
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        facts = {kind: set(values) for kind, values in FACTS.items()}
        for kind, values in self.merged.items():
            facts.setdefault(kind, set()).update(values)
        for check in CHECKS:
            needed = {path.relative_to(ROOT).as_posix() for path in (ROOT / check.folder).rglob("test_*.py")}
            if not needed <= facts.get("files", set()):
                continue
            problem = check.problem(facts)
            nodeid = f"run::{check.name}"
            report = pytest.TestReport(nodeid, ("run", None, check.name), {}, "failed" if problem else "passed",
                                       problem or None, "call")
            self.config.hook.pytest_runtest_logstart(nodeid=nodeid, location=report.location)
            self.config.hook.pytest_runtest_logreport(report=report)
            self.config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=report.location)
            if problem:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _FromWorkers:
    """The controller's side of xdist: each worker's facts as it goes down."""

    def __init__(self, judge: _Judge) -> None:
        self.judge = judge

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.judge.merge(getattr(node, "workeroutput", {}).get("run_facts", {}))


def register(config: pytest.Config) -> None:
    """Install the judge (and, under xdist, the collection of the workers' facts) in this process."""
    judge = _Judge(config)
    config.pluginmanager.register(judge, "run_checks")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_FromWorkers(judge), "run_checks_from_workers")
